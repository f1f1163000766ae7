"""Sentence-embedding speed against sentence-transformers, same model, texts and settings, same run.

The packaged all-MiniLM-L6-v2 (mean pooling, normalised, max length 256, as its sentence-transformers
files say) encodes the first N lines of SciCite (real sentences of varied length), batch size 32,
on CPU, with torch's default thread count for both:
  - bertkit: `load_encoder(model).encode(texts, batch_size=32)`, in process;
  - peer: `SentenceTransformer(model, device="cpu").encode(texts, batch_size=32)`, in process
    (the model folder's own Normalize module makes its vectors unit length; the norms are checked).
Both are warmed up on 64 texts, then timed alternately, R times each; medians and texts/s are
reported, with ratio = bertkit texts/s / sentence-transformers texts/s (>1: bertkit is faster).
The vectors must agree: max over texts of 1 - cosine(bertkit, sentence-transformers) < 1e-4.
Unless --no-cli: the whole command-line path, once per repeat, each in its own process (interpreter
start, imports, model load, encoding, writing a .npy): `bertkit embed` against this script's
`--st-peer` mode, which does the same with sentence-transformers.

sentence-transformers is needed by this benchmark only, not by bertkit; all it requires is already
installed with bertkit, so install it alone, leaving torch and transformers as they are:
    pip install --no-deps sentence-transformers
(checked with sentence-transformers 6.2.0, transformers 5.23.0, torch 2.13.0+cpu; `pip check` is clean.)

Usage: python bench/embed_speed.py [--n 2000] [--repeats 3] [--no-cli]
Writes bench/results/embed_speed.json and prints a table.
"""

from __future__ import annotations

import argparse
import itertools
import statistics
import subprocess
import sys
import time

import numpy as np
from common import DATA, ROOT, minilm_path, require, save, table

BATCH, WARMUP, MAX_COSINE_DISTANCE = 32, 64, 1e-4
INSTALL = "pip install --no-deps sentence-transformers"


def import_sentence_transformers():
    try:
        import sentence_transformers
    except ImportError as err:
        sys.exit(f"this benchmark needs sentence-transformers ({err}); install it alone with: {INSTALL}")
    return sentence_transformers


def read_texts(n: int) -> list[str]:
    """The first n non-blank lines, read as `bertkit embed` reads a .txt file."""
    with open(require(DATA / "en/text/scicite_sentences.txt"), encoding="utf-8") as handle:
        lines = (line.rstrip("\r\n") for line in handle)
        return list(itertools.islice((line for line in lines if line.strip()), n))


def cosine_distance(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    a, b = a.astype(np.float64), b.astype(np.float64)
    return 1 - (a * b).sum(1) / (np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1))


def unit_rows(vectors: np.ndarray) -> np.ndarray:
    return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


def norms(vectors: np.ndarray) -> dict:
    values = np.linalg.norm(vectors.astype(np.float64), axis=1)
    return {"min": float(values.min()), "max": float(values.max()), "unit": bool(np.allclose(values, 1, atol=1e-4))}


def timed(fn):
    started = time.perf_counter()
    value = fn()
    return value, time.perf_counter() - started


def st_peer(source: str, output: str) -> None:
    """`--st-peer INPUT OUTPUT`: the sentence-transformers counterpart of `bertkit embed`, in its own process."""
    import_sentence_transformers()
    from sentence_transformers import SentenceTransformer

    with open(source, encoding="utf-8") as handle:
        texts = [line.rstrip("\r\n") for line in handle if line.strip()]
    model = SentenceTransformer(minilm_path(), device="cpu")
    vectors = model.encode(texts, batch_size=BATCH, convert_to_numpy=True, show_progress_bar=False)
    np.save(output, vectors.astype(np.float32))


def cli_run(command: list[str]) -> float:
    started = time.perf_counter()
    subprocess.run(command, cwd=ROOT, check=True, capture_output=True, text=True)
    return time.perf_counter() - started


def main(argv):
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=2000, help="texts: the first N lines of SciCite")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--no-cli", action="store_true", help="skip timing the command-line path")
    parser.add_argument("--st-peer", nargs=2, metavar=("INPUT", "OUTPUT"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.st_peer:
        return st_peer(*args.st_peer)
    st_module = import_sentence_transformers()
    import torch
    import transformers
    from sentence_transformers import SentenceTransformer

    from bertkit.tasks.embed.encoder import load_encoder

    texts = read_texts(args.n)
    model_path = minilm_path()
    encoder = load_encoder(model_path, device="cpu")
    peer = SentenceTransformer(model_path, device="cpu")
    settings = encoder.settings
    if peer.max_seq_length != settings.max_length:
        sys.exit(f"max length differs: bertkit {settings.max_length}, sentence-transformers {peer.max_seq_length}")

    def run_bertkit():
        return encoder.encode(texts, batch_size=BATCH)

    def run_st():
        return peer.encode(
            texts, batch_size=BATCH, convert_to_numpy=True, normalize_embeddings=False, show_progress_bar=False
        )

    encoder.encode(texts[:WARMUP], batch_size=BATCH)
    peer.encode(texts[:WARMUP], batch_size=BATCH, show_progress_bar=False)
    encoder.truncated = 0
    times = {"bertkit": [], "st": []}
    for _ in range(args.repeats):
        ours, seconds = timed(run_bertkit)
        times["bertkit"].append(seconds)
        theirs, seconds = timed(run_st)
        times["st"].append(seconds)
    truncated = encoder.truncated // args.repeats

    distance = cosine_distance(ours, theirs)
    ours_norms, theirs_norms = norms(ours), norms(theirs)
    if ours_norms["unit"] and theirs_norms["unit"]:
        compared = "both unit length: raw vectors compared"
        max_abs_diff = float(np.abs(ours - theirs).max())
    else:  # like with like: cosine ignores the norms; the element-wise difference is taken on unit rows
        compared = "not both unit length: compared after L2-normalising both"
        max_abs_diff = float(np.abs(unit_rows(ours) - unit_rows(theirs)).max())

    rows = [
        {"method": "bertkit load_encoder().encode", "seconds": statistics.median(times["bertkit"])},
        {"method": "SentenceTransformer.encode", "seconds": statistics.median(times["st"])},
    ]

    cli_times = {}
    if not args.no_cli:
        folder = ROOT / "outputs" / "bench-embed"
        folder.mkdir(parents=True, exist_ok=True)
        source = folder / "texts.txt"
        source.write_text("".join(t + "\n" for t in texts), encoding="utf-8")
        commands = {
            "bertkit": [sys.executable, "-m", "bertkit", "embed", "-m", model_path, "-i", str(source)]
            + ["-o", str(folder / "bertkit.npy"), "-b", str(BATCH), "--device", "cpu"],
            "st": [sys.executable, str(ROOT / "bench" / "embed_speed.py"), "--st-peer", str(source)]
            + [str(folder / "st.npy")],
        }
        cli_times = {name: [] for name in commands}
        for _ in range(args.repeats):
            for name, command in commands.items():
                cli_times[name].append(cli_run(command))
        cli_distance = cosine_distance(np.load(folder / "bertkit.npy"), np.load(folder / "st.npy"))
        rows += [
            {"method": "bertkit embed (own process, .npy)", "seconds": statistics.median(cli_times["bertkit"])},
            {"method": "sentence-transformers (own process, .npy)", "seconds": statistics.median(cli_times["st"])},
        ]
    for row in rows:
        row["texts_per_s"] = len(texts) / row["seconds"]
    rows[0]["ratio"] = rows[0]["texts_per_s"] / rows[1]["texts_per_s"]
    rows[1]["ratio"] = 1.0
    if cli_times:
        rows[2]["ratio"] = rows[2]["texts_per_s"] / rows[3]["texts_per_s"]
        rows[3]["ratio"] = 1.0

    print(
        f"\nsentence embeddings, {len(texts)} SciCite sentences, MiniLM (pooling {settings.pooling}, "
        f"{'normalised' if settings.normalize else 'not normalised'}, max length {settings.max_length}), "
        f"batch {BATCH}, CPU, {torch.get_num_threads()} torch threads, median of {args.repeats}"
    )
    print(table(rows, ["method", "texts_per_s", "ratio", "seconds"]))
    print("ratio: bertkit texts/s / sentence-transformers texts/s (>1: bertkit is faster)")
    print(
        f"vectors: max 1 - cosine {distance.max():.2e} (limit {MAX_COSINE_DISTANCE:.0e}), "
        f"max |difference| {max_abs_diff:.2e}; {compared}; norms bertkit "
        f"{ours_norms['min']:.6f}..{ours_norms['max']:.6f}, sentence-transformers "
        f"{theirs_norms['min']:.6f}..{theirs_norms['max']:.6f}; {truncated} texts cut to {settings.max_length} tokens"
    )
    if cli_times:
        print(f"command-line outputs: max 1 - cosine {cli_distance.max():.2e}")
    worst = max(distance.max(), cli_distance.max() if cli_times else 0.0)
    agree = bool(worst < MAX_COSINE_DISTANCE)
    path = save(
        "embed_speed",
        {
            "rows": rows,
            "times_seconds": {"in_process": times, "command_line": cli_times},
            "vectors": {
                "max_cosine_distance": float(distance.max()),
                "mean_cosine_distance": float(distance.mean()),
                "max_abs_difference": max_abs_diff,
                "compared": compared,
                "norms": {"bertkit": ours_norms, "sentence_transformers": theirs_norms},
                "command_line_max_cosine_distance": float(cli_distance.max()) if cli_times else None,
                "agree": agree,
            },
            "settings": {
                "texts": len(texts),
                "source": "en/text/scicite_sentences.txt",
                "batch_size": BATCH,
                "repeats": args.repeats,
                "warmup_texts": WARMUP,
                "pooling": settings.pooling,
                "normalize": settings.normalize,
                "max_length": settings.max_length,
                "truncated_texts": truncated,
                "torch_threads": torch.get_num_threads(),
                "versions": {
                    "torch": torch.__version__,
                    "transformers": transformers.__version__,
                    "sentence_transformers": st_module.__version__,
                },
            },
        },
    )
    print(f"written to {path}")
    if not agree:
        sys.exit(f"the vectors disagree: max 1 - cosine {worst:.2e} is not below {MAX_COSINE_DISTANCE:.0e}")


if __name__ == "__main__":
    main(sys.argv[1:])

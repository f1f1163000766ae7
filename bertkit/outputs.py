"""Writing results so that nothing is half-written: temporary names, then an atomic rename.

Also the prediction writers (JSON lines, CSV, TSV) shared by every task.
"""

from __future__ import annotations

import contextlib
import csv
import io
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path

from bertkit.errors import BertkitError

OUTPUT_FORMATS = ("jsonl", "csv", "tsv", "conll", "squad")


def check_output_dir(path: Path, overwrite: bool) -> None:
    if path.exists() and not overwrite:
        raise BertkitError(
            f"output directory {path} already exists; pass --overwrite to replace it, "
            "or choose another with --output-dir"
        )


def publish_dir(staged: Path, final: Path, overwrite: bool) -> None:
    """Move a fully written `staged` directory to `final`, replacing an old one only if allowed."""
    check_output_dir(final, overwrite)
    final.parent.mkdir(parents=True, exist_ok=True)
    old = None
    if final.exists():
        old = final.with_name(f".{final.name}.old-{os.getpid()}")
        final.rename(old)
    staged.rename(final)
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)


def staging_dir(final: Path) -> Path:
    final.parent.mkdir(parents=True, exist_ok=True)
    return Path(tempfile.mkdtemp(prefix=f".{final.name}.tmp-", dir=final.parent))


@contextlib.contextmanager
def atomic_text(path: str | None):
    """A text handle that becomes `path` only when the block ends without error (stdout for None/'-')."""
    if path in (None, "-"):
        stream = io.TextIOWrapper(sys.stdout.buffer, encoding="utf-8", newline="", write_through=True)
        try:
            yield stream
        finally:
            stream.detach()
        return
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.tmp-", dir=target.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as handle:
            yield handle
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def write_json(path: Path, data) -> None:
    with atomic_text(str(path)) as handle:
        json.dump(data, handle, indent=2, ensure_ascii=False)
        handle.write("\n")


class RecordWriter:
    """Writes prediction records as JSON lines, flattened into CSV / TSV columns, as CoNLL token
    rows, or (squad) as the one JSON object `{id: answer}` that the official SQuAD scripts read."""

    def __init__(self, handle, fmt: str):
        if fmt not in OUTPUT_FORMATS:
            raise BertkitError(f"unknown output format '{fmt}'; use one of {', '.join(OUTPUT_FORMATS)}")
        self.handle, self.fmt = handle, fmt
        self._csv = None
        self._answers: dict[str, str] = {}

    def finish(self) -> None:
        if self.fmt == "squad":
            json.dump(self._answers, self.handle, indent=1, ensure_ascii=False)
            self.handle.write("\n")

    def write(self, record: dict) -> None:
        if self.fmt == "squad":
            if "id" not in record or "answer" not in record:
                raise BertkitError("the squad output format needs question answers with ids; use jsonl")
            self._answers[str(record["id"])] = record["answer"]
            return
        if self.fmt == "conll":  # token rows with the predicted tag as a last column
            rows = record.get("rows") or [[token] for token in record["tokens"]]
            for row, tag in zip(rows, record["tags"], strict=True):
                self.handle.write(" ".join([*row, tag]) + "\n")
            self.handle.write("\n")
            return
        if self.fmt == "jsonl":
            self.handle.write(json.dumps(record, ensure_ascii=False) + "\n")
            return
        flat = flatten(record)
        if self._csv is None:
            self._csv = csv.DictWriter(
                self.handle,
                fieldnames=list(flat),
                delimiter="," if self.fmt == "csv" else "\t",
                extrasaction="ignore",
            )
            self._csv.writeheader()
        self._csv.writerow(flat)


def flatten(record: dict, prefix: str = "") -> dict:
    """{'scores': {'pos': 0.9}} -> {'scores.pos': 0.9}; lists of plain values joined with '|'."""
    flat = {}
    for key, value in record.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict):
            flat.update(flatten(value, f"{name}."))
        elif isinstance(value, list) and all(not isinstance(v, dict | list) for v in value):
            flat[name] = "|".join(str(v) for v in value)
        elif isinstance(value, list):
            flat[name] = json.dumps(value, ensure_ascii=False)
        else:
            flat[name] = value
    return flat

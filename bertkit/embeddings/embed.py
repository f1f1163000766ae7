"""`bertkit embed`: stream texts through an encoder and write one vector per text, in input
order, as .npy (a float32 matrix), .parquet (text + embedding columns) or .jsonl. Inputs of any
size are read and encoded chunk by chunk; the output appears only when complete. A blank line or
an empty text keeps its row: a vector of zeros (marked `"empty": true` in JSON lines)."""

from __future__ import annotations

import contextlib
import shutil
from pathlib import Path

import numpy as np

from bertkit.core import sharding
from bertkit.core.data.formats import detect_format
from bertkit.core.data.readers import count_records, located_records
from bertkit.core.data.records import place_of, placed, text_value
from bertkit.core.errors import BertkitError
from bertkit.core.inference import chunks
from bertkit.core.outputs import atomic_path
from bertkit.core.outputs.records import json_line
from bertkit.core.outputs.strict_json import NotFinite
from bertkit.core.progress import bar

VECTOR_FORMATS = {".npy": "npy", ".parquet": "parquet", ".pq": "parquet", ".jsonl": "jsonl"}


def vector_format(output: str) -> str:
    suffix = Path(output).suffix.lower()
    if suffix not in VECTOR_FORMATS:
        raise BertkitError(f"--output {output}: write vectors to a .npy, .parquet or .jsonl file")
    return VECTOR_FORMATS[suffix]


class VectorWriter:
    """Appends (records, vectors) chunks; `close()` completes the file."""

    def __init__(self, target: Path, fmt: str, text_column: str):
        self.target, self.fmt, self.column = target, fmt, text_column
        self.rows, self.width = 0, None
        self._handle = None
        self._parquet = None
        if fmt in ("npy", "jsonl"):
            self._handle = open(target, "wb")

    def write(self, records: list[dict], vectors: np.ndarray) -> None:
        finite = np.isfinite(vectors).all(axis=1)
        if not finite.all():  # in every format: a NaN vector is no embedding (and .jsonl cannot hold it)

            first = int(np.argmin(finite))
            raise NotFinite(
                f"{place_of(records[first], self.rows + first + 1)}: its embedding holds NaN or "
                "infinite values; nothing was written. The model is broken (train it again with a lower learning rate)"
            )
        self.rows += len(records)
        self.width = vectors.shape[1]
        if self.fmt == "npy":  # raw rows now; the header, which needs the row count, at close
            self._handle.write(np.ascontiguousarray(vectors, dtype="<f4").tobytes())
        elif self.fmt == "jsonl":
            for record, vector in zip(records, vectors, strict=True):
                row = {k: record[k] for k in ("id",) if k in record}
                row["text"] = record.get(self.column)
                row["embedding"] = [round(float(x), 7) for x in vector]
                if not text_value(row["text"]).strip():
                    row["empty"] = True
                self._handle.write((json_line(row) + "\n").encode("utf-8"))
        else:
            self._write_parquet(records, vectors)

    def _write_parquet(self, records: list[dict], vectors: np.ndarray) -> None:
        import pyarrow as pa
        import pyarrow.parquet as pq

        flat = pa.array(np.ascontiguousarray(vectors, dtype=np.float32).reshape(-1))
        columns = {"text": pa.array([text_value(r.get(self.column)) for r in records], pa.string())}
        if "id" in records[0]:
            columns = {"id": pa.array([str(r.get("id")) for r in records], pa.string()), **columns}
        columns["embedding"] = pa.FixedSizeListArray.from_arrays(flat, vectors.shape[1])
        table = pa.table(columns)
        if self._parquet is None:
            self._parquet = pq.ParquetWriter(str(self.target), table.schema)
        self._parquet.write_table(table)

    def close(self) -> None:
        if self._parquet is not None:
            self._parquet.close()
        if self._handle is not None:
            self._handle.close()
        if self.fmt == "npy":
            _add_npy_header(self.target, self.rows, self.width or 0)


def _add_npy_header(path: Path, rows: int, width: int) -> None:
    raw = path.with_name(path.name + ".raw")
    path.rename(raw)
    try:
        with open(path, "wb") as out, open(raw, "rb") as body:
            np.lib.format.write_array_header_1_0(out, {"descr": "<f4", "fortran_order": False, "shape": (rows, width)})
            shutil.copyfileobj(body, out, 1 << 20)
    finally:
        raw.unlink(missing_ok=True)


def embed_file(
    encoder,
    source: str,
    output: str,
    input_format: str | None = None,
    text_column: str = "text",
    batch_size: int = 32,
    chunk_size: int = 4096,
) -> int:
    """Encode every record of `source` and write the vectors to `output`; returns the count (0 on
    a process other than the first of several, which writes nothing itself)."""

    fmt = vector_format(output)
    here = sharding.place()
    if here is not None:
        sharding.refuse_streams(source, output, "embed")
    input_format = detect_format(source, input_format)
    total = count_records(source, input_format, keep_blank=True) if source != "-" and here is None else None
    encoded = _encoded(encoder, source, input_format, text_column, batch_size, chunk_size, here)
    with contextlib.ExitStack() as stack:
        if here is not None:  # several processes: this one's chunks into its part, then all into the output
            stack.enter_context(sharding.group(here))
            shards = stack.enter_context(sharding.shards(here, output))
            with bar(f"embedding ({here.name()})") as progress:
                for unit, chunk, vectors in encoded:
                    shards.add(unit, (chunk, vectors))
                    progress.advance(progress.task_ids[0], len(chunk))
            encoder.truncated = sum(shards.finish(encoder.truncated))
            if not here.main:
                return 0
            encoded = ((unit, chunk, vectors) for unit, (chunk, vectors) in enumerate(shards.merged()))
        tmp = stack.enter_context(atomic_path(Path(output)))
        label = "embedding" if here is None else "writing vectors"
        written = _write(encoded, tmp, fmt, text_column, bar(label, total))
        if written == 0:
            raise BertkitError(f"{source}: no texts to embed (the file is empty)")
    encoder.report_truncation()
    return written


def _encoded(encoder, source, input_format, text_column, batch_size, chunk_size, here):
    """(unit, records, vectors) for each chunk of `chunk_size` records (one unit), or for this
    process's units only (unit u is process u mod N's)."""

    located = located_records(source, input_format, text_column=text_column, keep_blank=True)
    for unit, chunk in enumerate(chunks((placed(w, r) for w, r in located), chunk_size)):
        if here is not None and not here.owns(unit):
            continue
        before = unit * chunk_size
        texts = [_checked_text(record, text_column, before + i + 1) for i, record in enumerate(chunk)]
        vectors = np.zeros((len(chunk), encoder.dimension), dtype=np.float32)
        filled = [i for i, text in enumerate(texts) if text.strip()]
        if filled:
            vectors[filled] = encoder.encode([texts[i] for i in filled], batch_size)
        # what the writers read of a record: all a process's part needs to carry
        yield unit, [{k: r[k] for k in ("id", text_column) if k in r} for r in chunk], vectors


def _write(encoded, tmp: Path, fmt: str, text_column: str, progress) -> int:
    written = 0
    with progress:
        writer = VectorWriter(tmp, fmt, text_column)
        try:
            for _, chunk, vectors in encoded:
                writer.write(chunk, vectors)
                written += len(chunk)
                progress.update(progress.task_ids[0], completed=written)
        finally:
            writer.close()
    return written


def _checked_text(record, column: str, number: int) -> str:
    if column not in record:
        raise BertkitError(
            f"{record.where}: record {number} has no '{column}' field (fields: {', '.join(record)}); set --text-column"
        )
    return text_value(record[column], place_of(record, number), column)

"""`bertkit predict`: stream records from a file or stdin through a bundle, write one result each."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from bertkit.bundle import open_bundle
from bertkit.data.readers import count_records, read_records
from bertkit.errors import BertkitError
from bertkit.outputs import OUTPUT_FORMATS, RecordWriter, atomic_text
from bertkit.progress import bar
from bertkit.tasks import get_task


def output_format(output: str | None, explicit: str | None, input_format: str | None = None) -> str:
    if explicit:
        return explicit
    if input_format in ("conll", "squad"):
        return input_format
    suffix = Path(output).suffix.lower().lstrip(".") if output and output != "-" else ""
    return suffix if suffix in OUTPUT_FORMATS else "jsonl"


def predict_file(
    model: str,
    source: str,
    output: str | None,
    fmt: str | None = None,
    input_format: str | None = None,
    device: str | None = None,
    records: Iterable[dict] | None = None,
    **options,
) -> int:
    """Predict for every record of `source` (or of `records`, when given) and write the results."""
    bundle = open_bundle(model)
    task = get_task(bundle.task)
    tokenizer = bundle.load_tokenizer()
    network = bundle.load_model(task.auto_model, device)
    text_column = options.get("text_column") or bundle.info.get("text_column") or "text"
    options["text_column"] = text_column
    from bertkit.data.readers import detect_format

    if records is None:
        input_format = detect_format(source, input_format)
        records = read_records(source, input_format, text_column=text_column)
        total = count_records(source, input_format) if source != "-" else None
    else:
        records = list(records)
        total = len(records)
    written = 0
    with atomic_text(output) as handle, bar("predicting", total) as progress:
        writer = RecordWriter(handle, output_format(output, fmt, input_format))
        for record in task.predict(network, tokenizer, bundle.info, records, options):
            writer.write(record)
            written += 1
            progress.advance(progress.task_ids[0])
        if written == 0:
            raise BertkitError(f"{source}: no input records (the file is empty)")
        writer.finish()
    return written

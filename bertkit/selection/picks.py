"""The picks written for the labeller: the pool's own fields, in its order, with the label field
empty (an empty cell in CSV / TSV, null in JSON lines) and nothing added, so that a labelled
file appends to the training data as it is."""

from __future__ import annotations

import csv
import json


def write_picks(handle, records: list[dict], fmt: str) -> None:
    """`records` already hold the label field (None), where the pool had it or last."""
    if fmt == "jsonl":
        for record in records:
            handle.write(json.dumps(record, ensure_ascii=False) + "\n")
        return
    columns: list[str] = []
    for record in records:
        columns += [c for c in record if c not in columns]
    writer = csv.writer(handle, delimiter="\t" if fmt == "tsv" else ",", lineterminator="\n")
    writer.writerow(columns)
    for record in records:
        writer.writerow(["" if record.get(c) is None else _cell(record[c]) for c in columns])


def _cell(value) -> str:
    return json.dumps(value, ensure_ascii=False) if isinstance(value, list | dict) else str(value)

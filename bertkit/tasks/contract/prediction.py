"""The prediction part of the task contract (`Prediction`): how a bundle of the task is checked
when it is opened, and run on input records (`bertkit predict`, `bertkit serve`). `predict` and
`empty_result` are required; the rest have the default that reads one text field."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from bertkit.core.data.records import blank, text_value
from bertkit.core.errors import RecordError

if TYPE_CHECKING:
    from bertkit.core.run_info import RunInfo
    from bertkit.tasks.contract.options import PredictOptions


def require_field(record: dict, column: str, where: str, option: str = "--text-column", more: str = "") -> None:
    """The record has the field `column`, or a `RecordError` naming it (`option` sets it)."""
    if column not in record:
        fields = ", ".join(map(str, record)) or "none"
        raise RecordError(f"{where}: no '{column}' field (fields: {fields}); set {option}.{more}", column)


class Prediction(ABC):
    records_per_pass: int = 1024  # records `predict` takes from the input at a time (memory, not results)

    @abstractmethod
    def predict(
        self, model, tokenizer, info: RunInfo, records: Iterable[dict], options: PredictOptions
    ) -> Iterator[dict]:
        """One result per record, in order (records for which `is_empty` is true never reach it)."""

    @abstractmethod
    def empty_result(self, model, record: dict, info: RunInfo, options: PredictOptions) -> dict:
        """The result of an empty input: the usual shape, prediction fields null, "empty": true."""

    def check_info(self, root: Path, file: Path, info: dict, complete: bool) -> None:
        """Refuse a bundle's description (`file`, the bertkit.json of the model folder `root`) that
        this task cannot run, with a `BertkitError` naming the file and the key; `complete` is false
        when the command supplies some settings itself or only shows the bundle. Called by every
        command that opens a bundle (`tasks.bundle.read_info`), after the checks every task shares."""
        return None

    def is_empty(self, record: dict, info: RunInfo, options: PredictOptions) -> bool:
        """Whether a record has nothing to predict on (its text is blank)."""
        column = options.text_column or "text"
        return column in record and blank(record[column])

    def check_record(
        self, record: dict, tokenizer, info: RunInfo, options: PredictOptions, where: str, seen: dict
    ) -> None:
        """Refuse a record that `predict` cannot read (a `RecordError` naming `where` and the
        field), before any model runs: `bertkit predict` checks each record of its input with it,
        and `bertkit serve` each record of a request, so the two accept and refuse the same
        records. Records for which `is_empty` is true are not checked. `seen` is shared by the
        records of one input (one request), for checks across records (QA's unique ids).
        The default: the text field is there and holds text (null or a number is read as text)."""
        column = options.text_field(info)
        require_field(record, column, where)
        text_value(record[column], where, column)

    def read_gold(self, name: str, value, info: RunInfo, where: str):
        """A gold field's value as the task reads it (classify: the label, read as training reads
        labels, what no label can be refused naming `where`, the record's file:line), for `predict`
        to write beside the prediction; by default as the input has it."""
        return value

    def gold_fields(self, info: RunInfo) -> list[str]:
        """The fields in which a labelled input record holds its answer (classify's label column,
        NER's tags or entities): `predict` keeps them in its results under their own names, and
        a prediction field of the same name is written as `predicted_<name>`."""
        return []

"""How an NER bundle is checked and run on input records: entities of a text (character
spans), or tags of a sentence of tokens (CoNLL)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING

from bertkit.core import tokenization
from bertkit.core.data.records import Blank, blank, place_of, text_value
from bertkit.core.errors import RecordError
from bertkit.core.inference import chunks, empty_record
from bertkit.core.outputs.records import conll_cell_error
from bertkit.core.run_info import RunInfo, check_labels
from bertkit.tasks.contract import Prediction
from bertkit.tasks.contract.options import PredictOptions
from bertkit.tasks.ner.reading import (
    tokens_field_of,
    tokens_value,
)
from bertkit.tasks.ner.tagging import (
    CHUNK,
    describe,
    tag_sentences,
)

if TYPE_CHECKING:
    pass


class NerPrediction(Prediction):
    records_per_pass = CHUNK  # as evaluate tags them: the same batches, so the same tags

    def gold_fields(self, info: RunInfo) -> list[str]:
        ner = info.get("ner") or {}
        return [ner.get("tags_field") or "tags", ner.get("entities_field") or "entities"]

    def check_info(self, root, file, info: dict, complete: bool) -> None:
        check_labels(root, file, info)

    def is_empty(self, record: dict, info: RunInfo, options: PredictOptions) -> bool:
        """A token list with no tokens, or a text with nothing in it."""
        field = tokens_field_of(record, info)
        if field is not None:
            return not record[field]
        column = options.text_field(info)
        return column in record and blank(record[column])

    def check_record(self, record, tokenizer, info: RunInfo, options: PredictOptions, where: str, seen: dict) -> None:
        """A token list (of words), or a text."""
        field = tokens_field_of(record, info)
        if field is not None:
            tokens_value(record[field], where, field)
            return
        column = options.text_field(info)
        if column not in record:
            raise _no_text(record, where, column, info)
        text_value(record[column], where, column)

    def empty_result(self, model, record: dict, info: RunInfo, options: PredictOptions) -> dict:
        """Token-shaped (no tokens, no tags) for a token list, and for a blank line when the
        input's records are token lists or the output is CoNLL; text-shaped (no entities) else."""
        shape = record
        if isinstance(record, Blank):
            shape = record.like if record.like is not None else {}
            if options.output_format == "conll":
                shape = {"tokens": []}
        if tokens_field_of(shape, info) is not None:
            return empty_record(record, None, tokens=[], tags=[])
        return empty_record(record, options.text_field(info), entities=[])

    def predict(
        self, model, tokenizer, info: RunInfo, records: Iterable[dict], options: PredictOptions
    ) -> Iterator[dict]:
        """Text -> entities as character spans; tokens (JSON or CoNLL) -> a tag per token."""
        text_column = options.text_field(info)
        number = 0
        for chunk in chunks(records, self.records_per_pass):
            words, offsets = [], []
            for record in chunk:
                number += 1
                field = tokens_field_of(record, info)
                if field is not None:
                    words.append(tokens_value(record[field], place_of(record, number), field))
                    offsets.append(None)
                    if options.output_format == "conll" and "rows" not in record:
                        check_conll_tokens(words[-1], place_of(record, number))
                elif text_column in record:
                    found = tokenization.words_with_offsets(
                        tokenizer, text_value(record[text_column], place_of(record, number), text_column)
                    )
                    words.append([w for w, _, _ in found])
                    offsets.append([(s, e) for _, s, e in found])
                else:
                    raise _no_text(record, place_of(record, number), text_column, info)
            tagged = tag_sentences(model, tokenizer, info, words, options.batch_size)
            for record, sentence, where, found in zip(chunk, words, offsets, tagged, strict=True):
                yield describe(record, sentence, where, found, text_column)


def _no_text(record: dict, where: str, text_column: str, info: RunInfo) -> RecordError:
    tokens_field = (info.get("ner") or {}).get("tokens_field", "tokens")
    return RecordError(
        f"{where}: no '{text_column}' or '{tokens_field}' field (fields: {', '.join(map(str, record)) or 'none'}); "
        "set --text-column to the field holding the text",
        text_column,
    )


def check_conll_tokens(tokens: list[str], where: str) -> None:
    """Refused before the model runs, naming the input's line: a token that CoNLL output cannot
    carry (the writer checks every row by the same rule)."""

    for position, token in enumerate(tokens):
        error = conll_cell_error(token, position, where)
        if error:
            raise error

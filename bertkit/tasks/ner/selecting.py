"""The select part of ner (`bertkit select`): a row of tag probabilities per word of each pool
text (the words the tokenizer cuts it into, as predict reads them); words the model cannot read
(no sub-word token) are left out."""

from __future__ import annotations

import numpy as np

from bertkit.core import tokenization
from bertkit.core.data.records import text_value
from bertkit.core.errors import RecordError
from bertkit.tasks.contract import Selection
from bertkit.tasks.ner.tagging import tag_sentences


class NerSelection(Selection):
    def text(self, record: dict, info: dict, where: str) -> str:
        column = info.get("text_column") or "text"
        if column not in record:
            raise RecordError(
                f"{where}: no {column!r} field (fields: {', '.join(map(str, record))}); bertkit select reads a "
                "pool of texts, one a line or in that field",
                column,
            )
        return text_value(record[column], where, column)

    def key(self, text: str, tokenizer) -> str:
        """The words the tokenizer cuts the text into, as predict reads them: `Paris.` and the
        CoNLL tokens `Paris .` are one sentence."""
        return super().key(" ".join(w for w, _, _ in tokenization.words_with_offsets(tokenizer, text)), tokenizer)

    def training_texts(self, records: list[dict], info: dict) -> set[str]:
        """Texts, and token lists (CoNLL, JSON) read as their words joined by spaces."""
        fields = [(info.get("ner") or {}).get("tokens_field") or "tokens", "tokens"]
        joined = []
        for record in records:
            tokens = next((record[f] for f in fields if isinstance(record.get(f), list)), None)
            if tokens is not None:
                joined.append({**record, info.get("text_column") or "text": " ".join(map(str, tokens))})
            else:
                joined.append(record)
        return super().training_texts(joined, info)

    def label_field(self, info: dict) -> str:
        return (info.get("ner") or {}).get("entities_field") or "entities"

    def probability_rows(self, model, tokenizer, info: dict, texts: list[str], batch_size: int) -> list[np.ndarray]:
        words = [[w for w, _, _ in tokenization.words_with_offsets(tokenizer, t)] for t in texts]
        return [reading.probs[reading.seen] for reading in tag_sentences(model, tokenizer, info, words, batch_size)]

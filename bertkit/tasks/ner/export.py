"""NER's export: a row of tag logits per token."""

from __future__ import annotations

from typing import TYPE_CHECKING

from bertkit.tasks.contract import Export

if TYPE_CHECKING:
    pass


class NerExport(Export):
    per_token = True  # a row of tag logits per token

    def check_texts(self, records, column: str) -> list[str]:
        """Texts, and token records (CoNLL) read as their words joined: an NER model's input."""
        found = super().check_texts(records, column)
        return found + [" ".join(map(str, r["tokens"])) for r in records if isinstance(r.get("tokens"), list)]

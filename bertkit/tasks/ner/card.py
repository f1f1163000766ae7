"""NER's words in the model card."""

from __future__ import annotations

from typing import TYPE_CHECKING

from bertkit.tasks.contract import Card

if TYPE_CHECKING:
    pass


class NerCard(Card):
    def summary(self, info: dict) -> str:
        found = info.get("tag_scheme")
        return f"IOB2 tags (trained on {found['scheme']} data, read as IOB2)" if found else "IOB2 tags"

"""How much one request may ask (`bertkit serve --max-texts / --max-chars / --max-body-bytes`).
Light to import: the command reads it before anything heavy loads."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class Limits:
    """How much one request may ask: the answer to more is 413 with these numbers."""

    max_texts: int = 256
    max_chars: int = 200_000  # every string of a request's records together
    max_body_bytes: int | None = None  # the whole body as sent; None: `default_body_bytes`

    def body_bytes(self) -> int:
        return self.max_body_bytes or default_body_bytes(self.max_chars)

    def to_json(self) -> dict:
        return {"max_texts": self.max_texts, "max_chars": self.max_chars, "max_body_bytes": self.body_bytes()}


def default_body_bytes(max_chars: int) -> int:
    """4 MiB, or 16 bytes a character of `max_chars` where that is more: a request of
    `max_chars` characters fits even with every character written as JSON escapes (12 bytes for
    one beyond the Basic Multilingual Plane, `\\ud83d\\ude00`), with room for its field names."""
    return max(4 * 1024 * 1024, 16 * max_chars)

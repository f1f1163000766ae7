"""What `bertkit inspect` measures with the tokenizer (never the model's weights): lengths in
the model's tokens against `model.max_length`, and the unknown-token rate with the characters the
vocabulary does not know."""

from __future__ import annotations

from collections import Counter

import numpy as np

PERCENTILES = (50, 90, 95, 99)
BATCH = 2048
CHARACTERS_CHECKED = 5000  # distinct characters looked up, most frequent first


def token_ids(tokenizer, texts: list[str], pairs: list[str] | None = None) -> list[list[int]]:
    """Each text's token ids with the special tokens the model reads, uncut."""
    out: list[list[int]] = []
    for start in range(0, len(texts), BATCH):
        first = [t or "" for t in texts[start : start + BATCH]]
        second = [t or "" for t in pairs[start : start + BATCH]] if pairs is not None else None
        encoded = tokenizer(first, second, add_special_tokens=True, truncation=False, verbose=False)
        out += encoded["input_ids"]
    return out


def length_numbers(ids: list[list[int]], max_length: int) -> dict:
    lengths = np.asarray([len(row) for row in ids] or [0])
    return {
        "tokens": {f"p{p}": int(np.percentile(lengths, p)) for p in PERCENTILES} | {"max": int(lengths.max())},
        "mean": round(float(lengths.mean()), 1),
        "over_max_length": int((lengths > max_length).sum()),
        "over_max_length_share": round(float((lengths > max_length).mean()), 4) if len(ids) else 0.0,
    }


def unknown_numbers(tokenizer, texts: list[str], ids: list[list[int]]) -> dict:
    """The share of tokens that are the unknown token, and the characters it stands for most often."""
    unk = tokenizer.unk_token_id
    total = sum(len(row) for row in ids)
    unknown = sum(row.count(unk) for row in ids) if unk is not None else 0
    characters: Counter = Counter(c for text in texts for c in text if not c.isspace())
    strange = []
    if unk is not None:
        for char, count in characters.most_common(CHARACTERS_CHECKED):
            if unk in tokenizer(char, add_special_tokens=False, verbose=False)["input_ids"]:
                strange.append({"character": char, "code": f"U+{ord(char):04X}", "count": count})
    return {
        "unknown_tokens": unknown,
        "unknown_rate": round(unknown / total, 5) if total else 0.0,
        "unknown_characters": strange[:10],
    }

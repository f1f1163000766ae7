"""Loading tokenizers, and wrapping token ids we cut ourselves with the model's special tokens."""

from __future__ import annotations

import functools

from bertkit.errors import BertkitError


def load_tokenizer(name: str, revision: str | None = None, trust_remote_code: bool = False):
    from transformers import AutoTokenizer

    from bertkit import models

    source = models.resolve(name, revision)
    try:
        return AutoTokenizer.from_pretrained(source, revision=revision, trust_remote_code=trust_remote_code)
    except (OSError, ValueError) as err:
        raise BertkitError(f"could not load a tokenizer from {name}: {err}") from None


@functools.lru_cache(maxsize=8)
def _template(tokenizer) -> tuple[tuple[int, ...], tuple[int, ...]]:
    probe = "hello"
    plain = tokenizer(probe, add_special_tokens=False)["input_ids"]
    full = tokenizer(probe, add_special_tokens=True)["input_ids"]
    for start in range(len(full) - len(plain) + 1):
        if full[start : start + len(plain)] == plain:
            return tuple(full[:start]), tuple(full[start + len(plain) :])
    raise RuntimeError(f"cannot find the special-token layout of {type(tokenizer).__name__}")


def prefix_length(tokenizer) -> int:
    """How many special tokens come before the text ([CLS] for BERT)."""
    return len(_template(tokenizer)[0])


def special_budget(tokenizer) -> int:
    prefix, suffix = _template(tokenizer)
    return len(prefix) + len(suffix)


def wrap(tokenizer, ids: list[int]) -> dict:
    """Features for one single-text input whose content ids were chosen by us."""
    prefix, suffix = _template(tokenizer)
    input_ids = [*prefix, *ids, *suffix]
    features = {"input_ids": input_ids, "attention_mask": [1] * len(input_ids)}
    if "token_type_ids" in tokenizer.model_input_names:
        features["token_type_ids"] = [0] * len(input_ids)
    return features


def keep(ids: list[int], budget: int, mode: str, head_tokens: int | None = None) -> list[int]:
    """The ids left after cutting to `budget` the way `mode` (head, tail, head+tail) says."""
    if len(ids) <= budget:
        return ids
    if mode == "head":
        return ids[:budget]
    if mode == "tail":
        return ids[-budget:]
    head = min(head_tokens or budget // 4, budget)
    tail = budget - head
    return ids[:head] + (ids[-tail:] if tail else [])


def window_spans(length: int, budget: int, stride: int) -> list[tuple[int, int]]:
    """(start, end) of overlapping windows over `length` items: each at most `budget` long,
    consecutive ones sharing `stride` items, together covering everything."""
    if length <= budget:
        return [(0, length)]
    step = max(1, budget - stride)
    spans = []
    for start in range(0, length, step):
        spans.append((start, min(start + budget, length)))
        if start + budget >= length:
            break
    return spans


def windows(ids: list[int], budget: int, stride: int) -> list[list[int]]:
    """Overlapping pieces of `ids`, each at most `budget` long, consecutive ones sharing `stride`."""
    return [ids[start:end] for start, end in window_spans(len(ids), budget, stride)]


def words_with_offsets(tokenizer, text: str) -> list[tuple[str, int, int]]:
    """The words the tokenizer's pre-tokenizer sees in `text`, with character offsets into it."""
    backend = getattr(tokenizer, "backend_tokenizer", None)
    pre = getattr(backend, "pre_tokenizer", None) if backend else None
    if pre is None:
        import re

        return [(m.group(), m.start(), m.end()) for m in re.finditer(r"\w+|[^\w\s]", text)]
    return [(word, start, end) for word, (start, end) in pre.pre_tokenize_str(text)]

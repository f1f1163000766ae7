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


def windows(ids: list[int], budget: int, stride: int) -> list[list[int]]:
    """Overlapping pieces of `ids`, each at most `budget` long, consecutive ones sharing `stride`."""
    if len(ids) <= budget:
        return [ids]
    step = max(1, budget - stride)
    pieces = []
    for start in range(0, len(ids), step):
        pieces.append(ids[start : start + budget])
        if start + budget >= len(ids):
            break
    return pieces

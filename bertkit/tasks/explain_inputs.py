"""One text (or pair, or question and context) as the model's input, with its words: each word is
a span of the text and the token positions that the tokenizer made of it, so attributions can be
summed per word and drawn over the text as it was written. A single text or a pair is read here
(`encode_text`, as classify reads it); NER's and QA's own readings are in their task packages
(`bertkit/tasks/<task>/explaining.py`), on the `Encoded` and `words_in` shared here."""

from __future__ import annotations

from dataclasses import dataclass

from bertkit.core import tokenization
from bertkit.core.errors import BertkitError

BASELINES = ("pad", "mask")


@dataclass
class Word:
    text: str
    start: int  # characters of its part's text
    end: int
    part: int  # 0: the text (or the question); 1: the pair (or the context)
    positions: list[int]  # its tokens in the input; empty for a word the tokenizer drops


@dataclass
class Encoded:
    feature: dict  # input_ids, attention_mask (, token_type_ids): one input, as lists
    tokens: list[str]
    words: list[Word]
    texts: list[str]  # the text of each part
    parts: list[str]  # the parts' names: ["text"], ["text", "text_pair"], ["question", "context"]
    window: dict | None = None  # QA: the window as answer extraction reads it (offsets, [CLS])

    def tensors(self, device) -> dict:
        import torch

        return {k: torch.tensor([v], device=device) for k, v in self.feature.items()}

    def baseline_ids(self, tokenizer, baseline: str, device):
        """The input's ids with the token of every word replaced by [PAD] (or [MASK]); special
        tokens ([CLS], [SEP]) kept."""
        import torch

        token = tokenizer.pad_token_id if baseline == "pad" else tokenizer.mask_token_id
        if token is None:
            raise BertkitError(
                f"--baseline {baseline}: this model's tokenizer has no {baseline} token; "
                f"use --baseline {'mask' if baseline == 'pad' else 'pad'}"
            )
        ids = list(self.feature["input_ids"])
        for word in self.words:
            for position in word.positions:
                ids[position] = token
        return torch.tensor([ids], device=device)

    def groups(self) -> list[list[int]]:
        return [w.positions for w in self.words if w.positions]


def check_length(length: int, limit: int | None, what: str = "the text") -> None:
    if limit and length > limit:
        raise BertkitError(
            f"{what} is {length} tokens long, and this model reads at most {limit}: give a shorter text "
            "(or the part of it to explain)"
        )


def words_in(tokenizer, text: str, part: int, offsets: list[tuple[int, int]], first: int) -> list[Word]:
    """The words of `text` (as the tokenizer's pre-tokenizer, or MeCab, cuts it), each holding the
    tokens (at `first` + k for the k-th token, whose characters are `offsets[k]`) that start in it."""
    words = [Word(w, s, e, part, []) for w, s, e in tokenization.words_with_offsets(tokenizer, text)]
    if not words:
        words = [Word(text[s:e], s, e, part, []) for s, e in offsets]
    k = 0
    for index, (start, _) in enumerate(offsets):  # a token belongs to the first word that ends after its start
        while k < len(words) - 1 and start >= words[k].end:
            k += 1
        words[k].positions.append(first + index)
    return words


def _tokens(tokenizer, ids: list[int]) -> list[str]:
    return tokenizer.convert_ids_to_tokens(ids)


def encode_text(tokenizer, text: str, pair: str | None, limit: int | None) -> Encoded:
    """A single text or a pair, as classify reads it (special tokens as the model was trained with)."""
    texts = [text] if pair is None else [text, pair]
    read = tokenization.tokens_with_offsets(tokenizer, texts)
    first = tokenization.prefix_length(tokenizer)
    if pair is None:
        feature, starts = tokenization.wrap(tokenizer, read[0][0]), [first]
    else:
        feature, at = tokenization.wrap_pair(tokenizer, read[0][0], read[1][0])
        starts = [first, at]
    check_length(len(feature["input_ids"]), limit, "the text" if pair is None else "the pair")
    words = [
        w
        for part, (s, (_, offsets)) in enumerate(zip(starts, read, strict=True))
        for w in words_in(tokenizer, texts[part], part, offsets, s)
    ]
    names = ["text"] if pair is None else ["text", "text_pair"]
    return Encoded(feature, _tokens(tokenizer, feature["input_ids"]), words, texts, names)

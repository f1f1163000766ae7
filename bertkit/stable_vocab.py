"""Vocabularies that come out the same in every process. The tokenizers library's trainers break
ties between equally frequent pieces in hash-map order, which changes from one process to the next
(huggingface/tokenizers#1794): its WordPiece trainer then learns other pieces, its Unigram trainer
the same pieces in another order, and a tiny model built on either differed on every build though
its seed was the same. `settle` makes a learnt tokenizer's vocabulary a function of its texts:
WordPiece learnt again by `wordpiece_vocab` (the trainer's method, ties to the alphabetically first
pair), Unigram scores rounded to 8 decimals and pieces of equal score put in alphabetical order.
Byte-level BPE comes out the same already and is left as it is.

The WordPiece learner is plain Python, made for the small corpora tiny models learn from; `bertkit
tokenizer train` on a real corpus keeps the library's fast trainer."""

from __future__ import annotations

import json
from collections import Counter

TAIL_STEP = 1e-4  # the Unigram trainer's step between the scores of the characters it adds last


def wordpiece_vocab(words: list[str], size: int, specials: list[str]) -> dict[str, int]:
    """A WordPiece vocabulary of at most `size` entries learnt as tokenizers' WordPieceTrainer
    learns one (BPE merges of the most frequent adjacent pieces, "##" marking a piece inside a
    word), ties going to the alphabetically first pair."""
    counts = Counter(words)
    splits = {w: [w[0]] + ["##" + c for c in w[1:]] for w in counts}
    # as the trainer does: every character on its own, then the ## form of each that continues a word
    tokens = list(specials) + sorted({c for word in counts for c in word} - set(specials))
    tokens += sorted({piece for parts in splits.values() for piece in parts[1:]})
    known = set(tokens)
    while len(tokens) < size:
        pairs: Counter = Counter()
        for word, parts in splits.items():
            for pair in zip(parts, parts[1:], strict=False):
                pairs[pair] += counts[word]
        if not pairs:
            break
        (left, right), _ = min(pairs.items(), key=lambda item: (-item[1], item[0]))
        merged = left + right[2:]
        for parts in splits.values():
            i = 0
            while i < len(parts) - 1:
                if parts[i] == left and parts[i + 1] == right:
                    parts[i : i + 2] = [merged]
                i += 1
        if merged not in known:
            tokens.append(merged)
            known.add(merged)
    return {token: i for i, token in enumerate(tokens)}


def settle(tokenizer, texts: list[str], size: int):
    """`tokenizer` (a transformers fast tokenizer just learnt from `texts`) with a vocabulary that
    is the same in every process; its special tokens keep their ids."""
    from tokenizers import Tokenizer

    backend = tokenizer.backend_tokenizer
    state = json.loads(backend.to_str())
    model = state["model"]
    specials = sorted((t["id"], t["content"]) for t in state.get("added_tokens", []) if t.get("special"))
    if model["type"] == "WordPiece":
        words = [w for text in texts for w, _ in backend.pre_tokenizer.pre_tokenize_str(_normal(backend, text))]
        model["vocab"] = wordpiece_vocab(words, size, [content for _, content in specials])
    elif model["type"] == "Unigram":
        fixed = {i for i, _ in specials} | ({model["unk_id"]} if model.get("unk_id") is not None else set())
        if fixed != set(range(len(fixed))):
            return tokenizer  # not the trainer's layout (fixed pieces first): left as learnt
        head = [piece for i, piece in enumerate(model["vocab"]) if i in fixed]
        # scores to 8 decimals: the trainer's sums differ in the last bits from one process to the next
        rest = [[piece, round(score, 8)] for i, (piece, score) in enumerate(model["vocab"]) if i not in fixed]
        _even_tail(rest)
        rest.sort(key=lambda p: (-p[1], p[0]))
        model["vocab"] = head + rest  # the fixed pieces lead the trainer's vocabulary, so their ids hold
    else:
        return tokenizer
    tokenizer._tokenizer = Tokenizer.from_str(json.dumps(state))
    return tokenizer


def _even_tail(pieces: list[list]) -> None:
    """The Unigram trainer ends its vocabulary with the characters it must keep, in hash-set order,
    each scored a step (1e-4) below the one before (and a piece or so at the last one's score):
    the same scores go to the pieces of that run taken in alphabetical order instead."""
    start = len(pieces) - 1
    while start > 0 and -1e-7 < pieces[start - 1][1] - pieces[start][1] < TAIL_STEP + 1e-7:
        start -= 1
    if len(pieces) - start > 1:
        scores = [score for _, score in pieces[start:]]
        names = sorted(piece for piece, _ in pieces[start:])
        pieces[start:] = [[name, score] for name, score in zip(names, scores, strict=True)]


def _normal(backend, text: str) -> str:
    return backend.normalizer.normalize_str(text) if backend.normalizer is not None else text

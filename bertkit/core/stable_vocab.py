"""Vocabularies that come out the same in every process. The tokenizers library's trainers break
ties between equally frequent pieces in hash-map order, which changes from one process to the next
(huggingface/tokenizers#1794): its WordPiece trainer then learns other pieces, its Unigram trainer
the same pieces in another order, and a tiny model built on either differed on every build though
its seed was the same. `settle` makes a learnt tokenizer's vocabulary a function of its texts:
WordPiece learnt again by `wordpiece_vocab` (the trainer's method, ties to the alphabetically first
pair), Unigram scores rounded to 8 decimals and pieces of equal score put in alphabetical order.
Byte-level BPE comes out the same already and is left as it is.

The WordPiece learner is plain Python with the pair counts kept up to date between merges (a heap
of counts, stale entries skipped): 2.5 s for 8,000 entries from 3,000 IMDb reviews, 22 s for 30,000
from all 25,000 (the library's trainer: 5 s), and it is the one every WordPiece vocabulary bertkit
learns comes from (`bertkit tokenizer train`, `mlm.from_scratch`, `model tiny --vocab-from`)."""

from __future__ import annotations

import heapq
import json
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping

TAIL_STEP = 1e-4  # the Unigram trainer's step between the scores of the characters it adds last


def wordpiece_vocab(
    words: Iterable[str] | Mapping[str, int], size: int, specials: list[str], min_frequency: int = 0
) -> dict[str, int]:
    """A WordPiece vocabulary of at most `size` entries learnt as tokenizers' WordPieceTrainer
    learns one (BPE merges of the most frequent adjacent pieces while they occur `min_frequency`
    times or more, "##" marking a piece inside a word), ties going to the alphabetically first
    pair. `words`: the words of the text, or each distinct word with its count."""
    counts = Counter(words) if not isinstance(words, Mapping) else words
    distinct = list(counts)
    weights = [counts[word] for word in distinct]
    splits = [[word[0]] + ["##" + c for c in word[1:]] for word in distinct]
    # as the trainer does: every character on its own, then the ## form of each that continues a word
    tokens = list(specials) + sorted({c for word in distinct for c in word} - set(specials))
    tokens += sorted({piece for parts in splits for piece in parts[1:]})
    known = set(tokens)
    pairs: Counter = Counter()
    holders = defaultdict(set)  # pair -> the words that have (or had) it
    for i, parts in enumerate(splits):
        for pair in zip(parts, parts[1:], strict=False):
            pairs[pair] += weights[i]
            holders[pair].add(i)
    # the most frequent pair first, then the alphabetically first; an entry whose count has since
    # changed is stale and skipped (the pair's current count was pushed when it changed)
    heap = [(-count, pair) for pair, count in pairs.items()]
    heapq.heapify(heap)
    while len(tokens) < size and heap:
        count, (left, right) = heapq.heappop(heap)
        if pairs.get((left, right)) != -count:
            continue
        if -count < min_frequency:
            break
        merged = left + right[2:]
        changed = set()
        for i in holders.pop((left, right)):
            parts = splits[i]
            before = list(zip(parts, parts[1:], strict=False))
            j = 0
            while j < len(parts) - 1:
                if parts[j] == left and parts[j + 1] == right:
                    parts[j : j + 2] = [merged]
                j += 1
            for pair in before:
                pairs[pair] -= weights[i]
            for pair in zip(parts, parts[1:], strict=False):
                pairs[pair] += weights[i]
                holders[pair].add(i)
            changed.update(before, zip(parts, parts[1:], strict=False))
        for pair in changed:
            if pairs[pair] > 0:
                heapq.heappush(heap, (-pairs[pair], pair))
            else:
                del pairs[pair]
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
        model["vocab"] = wordpiece_vocab(word_counts(backend, texts), size, [content for _, content in specials])
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


def word_counts(backend, texts: Iterable[str]) -> Counter:
    """How often each word of `texts` occurs, words as the tokenizer `backend` (a tokenizers
    Tokenizer) cuts them: its normaliser, then its pre-tokenizer."""
    normalizer, pre_tokenizer = backend.normalizer, backend.pre_tokenizer
    counts: Counter = Counter()
    for text in texts:
        text = normalizer.normalize_str(text) if normalizer is not None else text
        counts.update(word for word, _ in pre_tokenizer.pre_tokenize_str(text))
    return counts

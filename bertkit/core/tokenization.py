"""Loading tokenizers; token ids with character offsets and words for every tokenizer (fast
ones report them, Japanese ones get them from `bertkit.core.japanese`); wrapping token ids we cut
ourselves with the model's special tokens."""

from __future__ import annotations

import functools

from bertkit.core import graphemes, japanese, models
from bertkit.core.errors import BertkitError, first_line

TOKENIZER_FILES = ("tokenizer.json", "vocab.txt", "vocab.json", "spiece.model", "sentencepiece.bpe.model")


def load_tokenizer(name: str, revision: str | None = None, trust_remote_code: bool = False):
    from pathlib import Path

    from transformers import AutoTokenizer


    source = models.resolve(name, revision, tokenizer_only=True)
    folder = Path(source)
    if folder.is_dir() and not any((folder / f).is_file() for f in TOKENIZER_FILES):
        raise BertkitError(
            f"{name} has no tokenizer files ({', '.join(TOKENIZER_FILES[:2])}, ...): without them every word "
            "would become [UNK]. Copy the tokenizer into it, or set model.tokenizer."
        )
    try:
        tokenizer = models.from_pretrained(AutoTokenizer, source, trust_remote_code, revision=revision)
        tokenizer("a")  # a vocabulary that loads but cannot tokenize (no [UNK] in it) fails here, not mid-run
    except BertkitError as err:
        raise BertkitError(str(err).replace("cannot load the model", "cannot load the tokenizer")) from None
    except Exception as err:  # tokenizers raises a plain Exception for a broken vocab.txt
        present = [f for f in TOKENIZER_FILES if (folder / f).is_file()] if folder.is_dir() else []
        files = f" ({', '.join(present)})" if present else ""
        reason = first_line(err)
        raise BertkitError(
            f"{name}: its tokenizer files{files} are damaged or incomplete ({reason}). Copy them again from the "
            "original model."
        ) from None
    if len(tokenizer) <= len(set(tokenizer.all_special_tokens)):
        # transformers 5 makes an empty tokenizer of the config's family when a Hub model has no
        # tokenizer files (in the cache, or at all): every word would become nothing or [UNK]
        raise BertkitError(
            f"{name} has no tokenizer files: the tokenizer made from it knows only its special tokens "
            f"({', '.join(tokenizer.all_special_tokens)}), so every word would be lost. Use a model that "
            "has its tokenizer (download it while online), or set model.tokenizer."
        )
    return japanese.with_token_types(tokenizer)


def check_offsets(tokenizer, job: str) -> None:
    """Stop early, and clearly, when a job needs character offsets this tokenizer cannot give."""
    if not getattr(tokenizer, "is_fast", False) and not japanese.is_japanese(tokenizer):
        raise BertkitError(
            f"{job} needs character offsets, which {type(tokenizer).__name__} does not give: use a model "
            "with a fast tokenizer (tokenizer.json) or a BertJapaneseTokenizer"
        )


def tokens_with_offsets(tokenizer, texts: list[str]) -> list[tuple[list[int], list[tuple[int, int]]]]:
    """For each text, its token ids (no special tokens) and each token's (start, end) in the text."""
    if not texts:
        return []
    if getattr(tokenizer, "is_fast", False):
        enc = tokenizer(texts, add_special_tokens=False, return_offsets_mapping=True)
        pairs = zip(enc["input_ids"], enc["offset_mapping"], strict=True)
        return [(ids, [tuple(o) for o in offsets]) for ids, offsets in pairs]
    check_offsets(tokenizer, "this job")
    out = []
    for text in texts:
        found = japanese.pieces(tokenizer, text)
        out.append((tokenizer.convert_tokens_to_ids([t for t, *_ in found]), [(s, e) for _, s, e, _ in found]))
    return out


def describe_tokens(tokenizer, text: str) -> list[dict]:
    """Each token of `text` with its id and the characters of `text` it covers (`bertkit tokenize`)."""
    check_offsets(tokenizer, "bertkit tokenize")
    ((ids, offsets),) = tokens_with_offsets(tokenizer, [text])
    tokens = tokenizer.convert_ids_to_tokens(ids)
    return [
        {"token": token, "id": i, "start": s, "end": e, "text": text[s:e]}
        for token, i, (s, e) in zip(tokens, ids, offsets, strict=True)
    ]


def subwords_of_words(tokenizer, words: list[list[str]]) -> list[tuple[list[int], list[int | None]]]:
    """For each word sequence, its sub-word ids (no special tokens) and the word of each."""
    if not words:
        return []
    if getattr(tokenizer, "is_fast", False):
        enc = tokenizer(words, is_split_into_words=True, add_special_tokens=False)
        return [(enc["input_ids"][i], enc.word_ids(i)) for i in range(len(words))]
    out = []
    for sequence in words:  # slow tokenizers (Japanese: MeCab may cut a given word further)
        ids, owners = [], []
        for w, word in enumerate(sequence):
            found = tokenizer.convert_tokens_to_ids(tokenizer.tokenize(word)) if word.strip() else []
            ids += found
            owners += [w] * len(found)
        out.append((ids, owners))
    return out


@functools.lru_cache(maxsize=8)
def _template(tokenizer) -> tuple[tuple[int, ...], tuple[int, ...]]:
    probe = "hello"
    plain = tokenizer(probe, add_special_tokens=False)["input_ids"]
    full = tokenizer(probe, add_special_tokens=True)["input_ids"]
    for start in range(len(full) - len(plain) + 1):
        if full[start : start + len(plain)] == plain:
            return tuple(full[:start]), tuple(full[start + len(plain) :])
    raise RuntimeError(f"cannot find the special-token layout of {type(tokenizer).__name__}")


@functools.lru_cache(maxsize=8)
def _pair_template(tokenizer) -> tuple:
    """(before a, between a and b, after b) special ids, and the token type of a's and b's parts."""
    probe_a, probe_b = "hello", "world"
    a = tokenizer(probe_a, add_special_tokens=False)["input_ids"]
    b = tokenizer(probe_b, add_special_tokens=False)["input_ids"]
    full = tokenizer(probe_a, probe_b, return_token_type_ids=True)
    ids, types = full["input_ids"], full.get("token_type_ids") or [0] * len(full["input_ids"])
    for i in range(len(ids) - len(a) + 1):
        if ids[i : i + len(a)] != a:
            continue
        for j in range(i + len(a), len(ids) - len(b) + 1):
            if ids[j : j + len(b)] == b:
                return tuple(ids[:i]), tuple(ids[i + len(a) : j]), tuple(ids[j + len(b) :]), types[i], types[j]
    raise RuntimeError(f"cannot find the pair layout of {type(tokenizer).__name__}")


def wrap_pair(tokenizer, a: list[int], b: list[int]) -> tuple[dict, int]:
    """Features for a text pair whose content ids were chosen by us, and where b starts."""
    before, between, after, type_a, type_b = _pair_template(tokenizer)
    head = [*before, *a, *between]
    input_ids = [*head, *b, *after]
    features = {"input_ids": input_ids, "attention_mask": [1] * len(input_ids)}
    if "token_type_ids" in tokenizer.model_input_names:
        features["token_type_ids"] = [type_a] * len(head) + [type_b] * (len(input_ids) - len(head))
    return features, len(head)


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
    """The words of `text` with character offsets into it: the words the tokenizer sees once its
    normaliser has run and its pre-tokenizer has split the text (MeCab's for a Japanese tokenizer),
    with the punctuation at a word's edges and each CJK ideograph made words of their own
    (`_apart`). Neighbours that share a grapheme cluster (`$` and the variation selector after
    it) are one word, so no word boundary cuts a character in two."""
    if japanese.is_japanese(tokenizer):
        found = japanese.words(tokenizer, text)
    else:
        backend = getattr(tokenizer, "backend_tokenizer", None)
        if backend is None or backend.pre_tokenizer is None:
            import re

            found = [(m.group(), m.start(), m.end()) for m in re.finditer(r"\w+|[^\w\s]", text)]
        else:
            found = []
            for start, end in _split_spans(backend, text):
                # the characters themselves: byte-level and SentencePiece-style pre-tokenizers
                # rewrite a word (Ġ, ▁) and keep the space before it, which is no part of it
                found.extend(_apart(text, start, end))
    return graphemes.join_split_words(text, found)


def _split_spans(backend, text: str) -> list[tuple[int, int]]:
    """The (start, end) in `text` of each piece the tokenizer's normaliser and pre-tokenizer make."""
    from tokenizers import PreTokenizedString

    pieces = PreTokenizedString(text)
    if backend.normalizer is not None:
        pieces.normalize(lambda piece: backend.normalizer.normalize(piece))
    backend.pre_tokenizer.pre_tokenize(pieces)
    return [tuple(split[1]) for split in pieces.get_splits(offset_referential="original", offset_type="char")]


def is_punctuation(char: str) -> bool:
    """Unicode punctuation, and ASCII's other printable non-alphanumerics ($, +, <, ^, `, ~), as
    BERT's own word splitting counts them."""
    import unicodedata

    code = ord(char)
    if 33 <= code <= 47 or 58 <= code <= 64 or 91 <= code <= 96 or 123 <= code <= 126:
        return True
    return unicodedata.category(char).startswith("P")


def is_ideograph(char: str) -> bool:
    """A CJK ideograph (the blocks BERT's normaliser puts apart): a word of its own, as Chinese and
    Japanese NER data give them, since the text has no spaces to find words by."""
    code = ord(char)
    return (
        0x4E00 <= code <= 0x9FFF
        or 0x3400 <= code <= 0x4DBF
        or 0xF900 <= code <= 0xFAFF
        or 0x20000 <= code <= 0x2FA1F
    )


def _apart(text: str, start: int, end: int) -> list[tuple[str, int, int]]:
    """`text[start:end]` (a piece the pre-tokenizer made) as words: the punctuation marks at its
    edges each a word ("(Paris)," is `(`, `Paris`, `)`, `,`: SentencePiece-style pre-tokenizers
    split at spaces only, and an entity could not end before the comma), each CJK ideograph a
    word, and the rest whole, punctuation inside it kept (O'Neill, U.S, 1,000, Jean-Pierre: a
    model trained on such tokens reads them whole). White space, which a normaliser may have read
    as none, is no part of a word."""
    cuts: list[tuple[int, int]] = []
    run = start
    for i in range(start, end + 1):
        if i < end and not (text[i].isspace() or is_ideograph(text[i])):
            continue
        if run < i:
            cuts.append((run, i))
        if i < end and not text[i].isspace():
            cuts.append((i, i + 1))
        run = i + 1
    words = []
    for a, b in cuts:
        lead, tail = a, b
        while lead < tail and is_punctuation(text[lead]):
            lead += 1
        while tail > lead and is_punctuation(text[tail - 1]):
            tail -= 1
        words += [(text[k], k, k + 1) for k in range(a, lead)]
        words += [(text[lead:tail], lead, tail)] if lead < tail else []
        words += [(text[k], k, k + 1) for k in range(tail, b)]
    return words

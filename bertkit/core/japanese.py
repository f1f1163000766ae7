"""Japanese text: MeCab words (fugashi with unidic-lite), and the character offsets that
`BertJapaneseTokenizer` does not give.

That tokenizer has no fast version, so no offset mapping and no `word_ids()`. It NFKC-normalises
the text, lets MeCab cut it into words, and cuts each word into WordPiece pieces (or characters).
Here the same steps are retraced with positions kept: every normalised character is traced back
to the original characters it came from, so offsets always point into the text the user gave,
whatever NFKC did to it (full-width letters, half-width katakana with voiced marks, ligatures
such as ㍿ that become several characters)."""

from __future__ import annotations

import functools
import unicodedata

from bertkit.core.errors import BertkitError
from bertkit.core.extras import install_command


def is_japanese(tokenizer) -> bool:
    """A BertJapaneseTokenizer-like tokenizer: a word tokenizer followed by a sub-word one."""
    return hasattr(tokenizer, "word_tokenizer") or hasattr(tokenizer, "subword_tokenizer")


def with_token_types(tokenizer):
    """BertJapaneseTokenizer does not list token_type_ids among its model inputs (transformers 5),
    so text pairs would reach BERT without their segment ids; list them. And MeCab reads its
    input as a C string, so everything after a NUL character would be silently lost: its word
    splitter reads a NUL as a space instead (same length, so character offsets are unchanged)."""
    if is_japanese(tokenizer) and "token_type_ids" not in tokenizer.model_input_names:
        tokenizer.model_input_names = ["input_ids", "token_type_ids", "attention_mask"]
    splitter = getattr(tokenizer, "word_tokenizer", None)
    if splitter is not None and not isinstance(splitter.tokenize, _ReadingPastNul):
        splitter.tokenize = _ReadingPastNul(splitter.tokenize)
    return tokenizer


class _ReadingPastNul:
    """A word splitter's `tokenize` that reads a NUL as a space (a class, so it pickles)."""

    def __init__(self, split):
        self.split = split

    def __call__(self, text, *args, **kwargs):
        return self.split(text.replace("\0", " "), *args, **kwargs)


def explain_load_error(name: str, err: BaseException) -> BertkitError | None:
    """A clear message for a Japanese tokenizer that cannot start (missing or broken MeCab parts)."""
    text = str(err).strip()
    if isinstance(err, RuntimeError) and ("MeCab" in text or "mecab" in text):
        details = [line.strip() for line in text.splitlines() if "no such" in line.lower() or "error" in line.lower()]
        why = details[-1] if details else text.splitlines()[0]
        return BertkitError(
            f"the tokenizer of {name} could not start MeCab ({why}). Check its mecab_kwargs (mecab_dic, "
            f"mecab_option) in tokenizer_config.json, or reinstall the dictionary: {install_command('ja')}"
        )
    if isinstance(err, ImportError) or any(k in text for k in ("fugashi", "unidic", "ipadic")):
        return BertkitError(
            f"the tokenizer of {name} cuts words with MeCab, which is not installed ({text}). "
            f"Install it with: {install_command('ja')}"
        )
    return None


@functools.lru_cache(maxsize=1)
def mecab():
    """A MeCab tagger with the unidic-lite dictionary (for vocabularies and whole-word masking)."""
    try:
        import fugashi
        import unidic_lite
    except ImportError as err:
        raise BertkitError(f"Japanese text needs MeCab ({err}). Install it with: {install_command('ja')}") from None
    try:
        return fugashi.GenericTagger(f'-d "{unidic_lite.DICDIR}" -r "{unidic_lite.DICDIR}/mecabrc"')
    except RuntimeError as err:
        raise BertkitError(
            f"MeCab could not start with unidic-lite: {err}. Reinstall it: {install_command('ja')}"
        ) from None


def split_words(text: str) -> list[str]:
    """The MeCab words of NFKC-normalised `text` (what a Tohoku-style vocabulary is learnt on)."""
    return [word.surface for word in mecab()(unicodedata.normalize("NFKC", text))]


# ---------------------------------------------------------------- normalisation with positions


def normalise(text: str, nfkc: bool = True) -> tuple[str, list[tuple[int, int]]]:
    """NFKC of `text`, and for each of its characters the (start, end) of the original
    characters it came from."""
    if not nfkc:
        return text, [(i, i + 1) for i in range(len(text))]
    whole = unicodedata.normalize("NFKC", text)
    clusters = _clusters(text)
    out, spans = [], []
    for start, end in clusters:
        piece = unicodedata.normalize("NFKC", text[start:end])
        out.append(piece)
        singles = [unicodedata.normalize("NFKC", c) for c in text[start:end]]
        if "".join(singles) == piece:  # nothing composed (京 + a lone accent): each keeps its own place
            for at, single in enumerate(singles, start=start):
                spans.extend([(at, at + 1)] * len(single))
        else:  # composed (か + ゙ -> が, e + ́ -> é): the result comes from the whole run
            spans.extend([(start, end)] * len(piece))
    if "".join(out) == whole:
        return whole, spans
    return whole, _spans_by_prefix(text, whole)


def _clusters(text: str) -> list[tuple[int, int]]:
    """Runs of a base character and the marks that NFKC may fold into it."""
    clusters: list[tuple[int, int]] = []
    for i, char in enumerate(text):
        folded = unicodedata.normalize("NFKC", char)
        joins = clusters and folded and all(unicodedata.combining(c) for c in folded)
        if joins:
            clusters[-1] = (clusters[-1][0], i + 1)
        else:
            clusters.append((i, i + 1))
    return clusters


def _spans_by_prefix(text: str, whole: str) -> list[tuple[int, int]]:
    """Slow but sure: cut where the normalised prefix is a stable prefix of the whole."""
    cuts, done = [0], 0  # done: length of the normalised text before the last cut
    for j in range(1, len(text) + 1):
        head = unicodedata.normalize("NFKC", text[cuts[-1] : j])
        if whole.startswith(head, done) and (
            j == len(text) or unicodedata.normalize("NFKC", text[:j]) + unicodedata.normalize("NFKC", text[j:]) == whole
        ):
            cuts.append(j)
            done = len(unicodedata.normalize("NFKC", text[:j]))
    spans: list[tuple[int, int]] = []
    for start, end in zip(cuts, cuts[1:], strict=False):
        spans.extend([(start, end)] * len(unicodedata.normalize("NFKC", text[start:end])))
    return spans


# ---------------------------------------------------------------- words and pieces with offsets


def _segments(tokenizer, text: str) -> list[tuple[str, int, bool]]:
    """The text cut at special / added tokens written in it (as the tokenizer does): (piece,
    offset, is a special token)."""
    trie = getattr(tokenizer, "tokens_trie", None)
    parts = trie.split(text) if trie is not None else [text]
    keep = set(getattr(tokenizer, "_added_tokens_encoder", {})) | set(tokenizer.all_special_tokens)
    out, at = [], 0
    for part in parts:
        out.append((part, at, part in keep))
        at += len(part)
    return out


def words(tokenizer, text: str) -> list[tuple[str, int, int]]:
    """The words the tokenizer's word splitter (MeCab) finds, with offsets into `text`."""
    return [(w, chars[0][0], chars[-1][1]) for w, chars, _ in _words(tokenizer, text)]


def _words(tokenizer, text: str) -> list[tuple[str, list[tuple[int, int]], bool]]:
    """(word, original (start, end) of each of its characters, is a special token)."""
    word_tokenizer = getattr(tokenizer, "word_tokenizer", None)
    nfkc = getattr(word_tokenizer, "normalize_text", False)
    lower = bool(getattr(tokenizer, "do_lower_case", False) or getattr(word_tokenizer, "do_lower_case", False))
    found = []
    for part, offset, special in _segments(tokenizer, text):
        if special:
            found.append((part, [(offset, offset + len(part))] * len(part), True))
            continue
        part = part.replace("\0", " ")  # as the word splitter reads it (see with_token_types)
        if word_tokenizer is None:
            surfaces = [part] if part.strip() else []
        else:
            surfaces = word_tokenizer.tokenize(part, never_split=tokenizer.all_special_tokens)
        norm, spans = normalise(part, nfkc)
        hay = norm
        if lower:  # the splitter lower-cases its words; `İ` becomes two characters, each from the İ
            hay = norm.lower()
            spans = [span for char, span in zip(norm, spans, strict=True) for _ in char.lower()]
        cursor = 0
        for surface in surfaces:
            at = hay.find(surface, cursor)
            if at < 0 or hay[cursor:at].strip():
                raise BertkitError(
                    f"could not place the word {surface!r} in {part!r} (at character {cursor} of its "
                    "normalised form); please report this text"
                )
            end = at + len(surface)
            if surface.strip():  # MeCab can give a CR as a word: white space, which no token comes from
                found.append((surface, [(offset + s, offset + e) for s, e in spans[at:end]], False))
            cursor = end
    return found


def pieces(tokenizer, text: str) -> list[tuple[str, int, int, int]]:
    """(token, start, end, word number) for every token of `text` (no special tokens added),
    exactly as `tokenizer.tokenize(text)` gives them, with offsets into `text`."""
    unk = tokenizer.unk_token
    sub = getattr(tokenizer, "subword_tokenizer", None)
    out = []
    for number, (word, chars, special) in enumerate(_words(tokenizer, text)):
        if special or sub is None:
            out.append((word, chars[0][0], chars[-1][1], number))
            continue
        tokens = sub.tokenize(word)
        lengths = [len(t[2:] if t.startswith("##") else t) for t in tokens]
        if unk in tokens and sum(lengths) != len(word):
            if len(tokens) != len(word):  # a word that could not be cut: one [UNK] for all of it
                out.extend((t, chars[0][0], chars[-1][1], number) for t in tokens)
                continue
            lengths = [1] * len(tokens)  # characters: one [UNK] per unknown character
        at = 0
        for token, length in zip(tokens, lengths, strict=True):
            out.append((token, chars[at][0], chars[at + length - 1][1], number))
            at += length
    return out

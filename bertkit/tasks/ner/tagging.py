"""Sub-word windows over tagged words, and one tag per word back from the model (training, evaluate
and predict all read their tags from `tag_words`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from bertkit.core import graphemes, metrics, tokenization
from bertkit.core.data import WHERE
from bertkit.core.data.records import place_of, text_value
from bertkit.core.errors import BertkitError
from bertkit.core.inference import chunks, forward, softmax
from bertkit.core.progress import console
from bertkit.tasks.ner import tags

IGNORE = -100


CHUNK = 512  # sentences tagged together by predict and evaluate (the same batches, so the same tags)


def tag_ids(word_tags: list[list[str]], info: dict, role: str, split=None) -> list[list[int]]:
    """The ids of the data's (IOB2) tags among the model's labels, both read in one spelling
    (`tags.normal_tag`): a model whose labels are written `B_PER` knows the data's `B-PER`. A tag
    the model does not know is an error naming its sentence's `file:line` (from `split`'s place
    column, where it has one)."""
    index = {_spelled(name): i for i, name in enumerate(info["labels"])}
    out = []
    for number, seq in enumerate(word_tags, start=1):
        for tag in seq:
            if tag not in index:
                raise BertkitError(
                    f"{_place(split, number) or f'{role} data, sentence {number}'}: tag '{tag}' is not one the "
                    f"model knows ({', '.join(info['labels'])}). Fix the data, or list every tag in data.labels."
                )
        out.append([index[t] for t in seq])
    return out


def _place(split, number: int) -> str:
    """Where the `number`-th sentence of `split` (a `datasets.Dataset`) came from, when it says."""

    names = getattr(split, "column_names", None) or []
    for name in (WHERE, "where"):
        if name in names:
            return str(split[number - 1][name] or "")
    return ""


def _spelled(name: str) -> str:
    try:
        return tags.normal_tag(name)
    except ValueError:  # not a tag: as it is (the data's tags never match it)
        return name


def encode_words(
    tokenizer, words: list[list[str]], info: dict, labels: list[list[int]] | None, role: str | None = None
) -> list[dict]:
    """Model features for word sequences: windows of sub-words, each word owned by one window.

    Every feature carries its sentence's number (`example`), the word each position starts
    (`word_index`, -1 elsewhere) and how many words the sentence has (`word_count`, words without
    any sub-word included). With `labels` (gold tag ids, one per word), features also carry
    `labels` per position and the gold ids of every word of the sentence (`word_labels`, what
    scores are measured against)."""
    budget = info["max_length"] - tokenization.special_budget(tokenizer)
    stride = min(info.get("stride", 32), budget // 2)
    prefix = tokenization.prefix_length(tokenizer)
    all_subwords = info.get("label_all_subwords", False)
    names = info["labels"]
    index = {name: i for i, name in enumerate(names)}
    features = []
    unseen = 0
    for example, (ids, word_ids) in enumerate(tokenization.subwords_of_words(tokenizer, words)):
        first: dict[int, int] = {}
        for pos, w in enumerate(word_ids):
            if w is not None and w not in first:
                first[w] = pos
        count = len(words[example])
        taught = None
        if labels is not None:
            seen = [w in first for w in range(count)]
            unseen += sum(not s and labels[example][w] != index.get("O") for w, s in enumerate(seen))
            # the labels of the words the model reads, valid IOB2 among themselves (an entity
            # whose first word has no token starts at its next word)
            taught = [index[t] for t in tags.iob2_over_seen([names[i] for i in labels[example]], seen)]
        spans = tokenization.window_spans(len(ids), budget, stride)
        owner = {w: _owning_window(spans, pos) for w, pos in first.items()}
        for k, (start, end) in enumerate(spans):
            feature = tokenization.wrap(tokenizer, ids[start:end])
            word_index = [-1] * len(feature["input_ids"])
            label_row = [IGNORE] * len(feature["input_ids"])
            for pos in range(start, end):
                w = word_ids[pos]
                if w is None or owner.get(w) != k:
                    continue
                slot = prefix + pos - start
                if first[w] == pos:
                    word_index[slot] = w
                    if taught is not None:
                        label_row[slot] = taught[w]
                elif all_subwords and taught is not None:
                    tag = names[taught[w]]
                    label_row[slot] = index["I-" + tag[2:]] if tag.startswith("B-") else taught[w]
            feature["word_index"] = word_index
            feature["example"] = example
            feature["word_count"] = count
            if labels is not None:
                feature["labels"] = label_row
                feature["word_labels"] = list(labels[example])
            features.append(feature)
    if unseen and role:
        say_unseen(unseen, role)
    return features


def say_unseen(count: int, role: str) -> None:
    console.print(
        f"[yellow]warning:[/yellow] {role}: {count} word(s) inside entities have no sub-word token at all "
        "(e.g. a lone soft hyphen or zero-width space); the model cannot see them, so they are "
        "predicted O and count as misses when scored"
    )


def _owning_window(spans: list[tuple[int, int]], pos: int) -> int:
    """The window in which position `pos` has the most context on both sides."""

    def margin(k: int) -> int:
        start, end = spans[k]
        return min(pos - start, end - 1 - pos) if start <= pos < end else -1

    return max(range(len(spans)), key=margin)


@dataclass
class WordTags:
    """The model's reading of one sentence: exactly one entry per word."""

    tags: list[str]  # IOB2
    probs: np.ndarray  # (words, labels); a word with no sub-word token has the O row
    seen: np.ndarray  # bool per word: it has a sub-word token, so the model read it


def tag_words(features, rows: list, names: list[str]) -> list[WordTags]:
    """Model rows (logits per position) of `features` (windows from `encode_words`) turned into
    tags, in sentence order: each word takes the row at its first sub-word in the window that
    owns it, and a word with no sub-word gets O without moving any other word's tag. The one
    function behind predict, evaluate and training's scores."""
    counts: dict[int, int] = {}
    picked: dict[int, dict[int, np.ndarray]] = {}
    for example, word_index, count, row in zip(
        features["example"], features["word_index"], features["word_count"], rows, strict=True
    ):
        counts[example] = count
        mine = picked.setdefault(example, {})
        for slot, w in enumerate(word_index):
            if w >= 0:
                mine[w] = row[slot]
    if sorted(counts) != list(range(len(counts))):
        raise RuntimeError("features must hold every sentence from 0 on")
    outside = names.index("O") if "O" in names else None
    out = []
    for example in range(len(counts)):
        count, mine = counts[example], picked[example]
        probs = np.zeros((count, len(names)), dtype=np.float32)
        if outside is not None:
            probs[:, outside] = 1.0
        seen = np.zeros(count, dtype=bool)
        for w, logits in mine.items():
            probs[w] = softmax(np.asarray(logits, dtype=np.float32)[: len(names)])
            seen[w] = True
        raw = [names[int(p.argmax())] if s else "O" for p, s in zip(probs, seen, strict=True)]
        out.append(WordTags(tags.iob2_over_seen(raw, list(seen)), probs, seen))
    return out


def tag_sentences(model, tokenizer, info: dict, words: list[list[str]], batch_size: int) -> list[WordTags]:
    """The model's tags for word sequences (`CHUNK` sentences per pass, as predict reads them)."""
    out: list[WordTags] = []
    for part in chunks(words, CHUNK):
        features = encode_words(tokenizer, part, info, None)
        logits = forward(model, tokenizer, features, batch_size)
        columns = {k: [f[k] for f in features] for k in ("example", "word_index", "word_count")}
        out += tag_words(columns, logits, info["labels"])
    return out


def score_tags(predicted: list[list[str]], gold: list[list[str]]) -> dict:
    """Entity-level scores of predicted IOB2 tags against gold ones, one tag per word each."""
    for number, (p, g) in enumerate(zip(predicted, gold, strict=True), start=1):
        if len(p) != len(g):
            raise RuntimeError(f"sentence {number}: {len(p)} predicted tags for {len(g)} words")
    return metrics.load("ner").compute(predictions=predicted, references=gold)


def describe(record: dict, words: list[str], offsets, tagged: WordTags, text_column: str) -> dict:
    out = {k: record[k] for k in ("id",) if k in record}
    if offsets is None:
        out["tokens"] = words
        out["tags"] = tagged.tags
        if "rows" in record:
            out["rows"] = record["rows"]
        return out
    text = text_value(record[text_column], place_of(record, 0), text_column)
    out["text"] = text
    confidence = tagged.probs.max(-1) if len(tagged.probs) else np.zeros(0)
    entities = []
    for kind, first, last, start, end in entity_spans(text, offsets, tagged.tags):
        read = tagged.seen[first:last]  # the score is the model's, over the words it read
        entities.append(
            {
                "type": kind,
                "start": start,
                "end": end,
                "text": text[start:end],
                "score": round(float(confidence[first:last][read].mean()), 6) if read.any() else None,
            }
        )
    out["entities"] = entities
    return out


def entity_spans(text: str, offsets, word_tags: list[str]) -> list[tuple[str, int, int, int, int]]:
    """(type, first word, last word + 1, start, end) of each entity in `word_tags`, its characters
    of `text` whole clusters (an entity ends after the marks of its last character): the spans
    predict writes and evaluate scores on character-span data. `offsets`: (start, end) per word."""
    clusters = graphemes.Graphemes(text)
    return [
        (kind, first, last, *clusters.snap(offsets[first][0], offsets[last - 1][1]))
        for kind, first, last in tags.entities(word_tags)
    ]

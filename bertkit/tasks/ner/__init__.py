"""Named-entity recognition: CoNLL columns, token/tag JSON, character-span data, raw text.

Every input becomes words with IOB2 tags (and, when there is a text, the words' character
offsets, found by the tokenizer's own pre-tokenizer). Sentences longer than the model's limit are
cut into overlapping sub-word windows; each word is labelled and predicted in exactly one window
(the one where it sits most centrally), so nothing is dropped and nothing is counted twice.

Every word keeps its own place whatever its tokenization: `tag_words` turns model rows into one
tag per word of each sentence, and a word with no sub-word token at all (a lone soft hyphen,
zero-width space, U+FFFD, NUL, combining mark) gets O without moving any other word's tag (see
`tags.iob2_over_seen`). Training's scores, `bertkit evaluate` and `bertkit predict` all read
their tags from it, and score them against the gold tag of every word.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass

import numpy as np

from bertkit import data as data_mod
from bertkit import graphemes, metrics, models, tokenization
from bertkit.config import Config, DataSource
from bertkit.data.readers import Blank, place_of, text_value
from bertkit.errors import BertkitError
from bertkit.inference import chunks, empty_record, forward, softmax
from bertkit.progress import console
from bertkit.tasks.base import Task, pad_multiple
from bertkit.tasks.ner import tags

IGNORE = -100
CHUNK = 512  # sentences tagged together by predict and evaluate (the same batches, so the same tags)


class NerTask(Task):
    name = "ner"
    auto_model = "AutoModelForTokenClassification"

    # ------------------------------------------------------------ data

    def load(self, cfg: Config):
        scheme = None if cfg.ner.scheme == "auto" else cfg.ner.scheme

        def read(source: DataSource, role: str):
            import datasets

            records = read_examples(source, cfg, role)
            return datasets.Dataset.from_list(records)

        splits = data_mod.load_splits(cfg, read)
        if scheme is None and "tags" in splits["train"].column_names:
            scheme = _detect(splits["train"]["tags"], "train")
        for role, split in splits.items():
            if "tags" in split.column_names:
                splits[role] = _normalise(split, scheme or "IOB2", role)
        return splits

    def setup(self, ds, cfg: Config) -> dict:
        train = ds["train"]
        if cfg.data.labels:
            types = sorted({t.split("-", 1)[-1] for t in cfg.data.labels if t != "O"})
        elif "tags" in train.column_names:
            types = sorted({t[2:] for seq in train["tags"] for t in seq if t != "O"})
        else:
            types = sorted({e["type"] for ents in train["entities"] for e in ents})
        if not types:
            raise BertkitError(
                "the training data has no entities at all: nothing to learn. Check ner.tag_column / the tags"
            )
        return {
            "task": self.name,
            "labels": tags.label_list(types),
            "max_length": cfg.model.max_length,
            "stride": cfg.ner.stride,
            "label_all_subwords": cfg.ner.label_all_subwords,
            "text_column": cfg.data.text_column,
            "ner": cfg.ner.model_dump(),
        }

    def prepare(self, ds, tokenizer, info: dict):
        import datasets

        prepared = {}
        for role, split in ds.items():
            words, word_tags = _words_and_tags(split, tokenizer, role)
            features = encode_words(tokenizer, words, info, _tag_ids(word_tags, info, role), role)
            prepared[role] = datasets.Dataset.from_list(features)
        return datasets.DatasetDict(prepared)

    # ------------------------------------------------------------ model and training

    def build_model(self, source: str, info: dict, cfg: Config):
        from transformers import AutoModelForTokenClassification

        labels = info["labels"]
        return models.load_weights(
            AutoModelForTokenClassification,
            source,
            cfg,
            num_labels=len(labels),
            id2label=dict(enumerate(labels)),
            label2id={name: i for i, name in enumerate(labels)},
            ignore_mismatched_sizes=True,
        )

    def collator(self, tokenizer, cfg: Config):
        from transformers import DataCollatorForTokenClassification

        return DataCollatorForTokenClassification(tokenizer, pad_to_multiple_of=pad_multiple(cfg))

    def best_metric(self, info: dict) -> str:
        return "f1"

    def metric_names(self, info: dict) -> list[str]:
        names = ["precision", "recall", "f1"]
        return [*names, "token_accuracy", *[f"lenient_{n}" for n in names]]

    def metric_fn(self, info: dict, features, examples):
        """Exact entity-level scores of a Trainer prediction on `features`: window predictions
        merged back into one tag per word of each sentence (`tag_words`, as predict does), scored
        against every word's gold tag."""
        columns = {k: features[k] for k in ("example", "word_index", "word_count", "word_labels")}
        return lambda prediction: self.score_rows([np.asarray(r) for r in prediction.predictions], columns, info)

    def score_rows(self, logits_rows: list, features, info: dict) -> dict:
        """Scores of model rows on `features` that carry the gold tags of their sentences."""
        names = info["labels"]
        predicted = [t.tags for t in tag_words(features, logits_rows, names)]
        gold: dict[int, list[str]] = {}
        for example, word_labels in zip(features["example"], features["word_labels"], strict=True):
            gold.setdefault(example, [names[i] for i in word_labels])
        return score_tags(predicted, [gold[k] for k in range(len(gold))])

    # ------------------------------------------------------------ evaluate and predict

    def evaluate(self, model, tokenizer, info: dict, data: str, options: dict) -> dict:
        from bertkit.config import load_config

        cfg = load_config(None, task=self.name)
        cfg.ner = cfg.ner.model_validate(info.get("ner") or {})
        cfg.data.text_column = info.get("text_column") or "text"
        import datasets

        records = read_examples(DataSource(path=data, format=options.get("data_format")), cfg, "evaluation")
        split = datasets.Dataset.from_list(records)
        if "tags" in split.column_names:
            scheme = _detect(split["tags"], data) if cfg.ner.scheme == "auto" else cfg.ner.scheme
            split = _normalise(split, scheme, data)
        words, word_tags = _words_and_tags(split, tokenizer, data)
        require_entities(word_tags, data)
        _tag_ids(word_tags, info, data)  # every gold tag must be one the model knows
        # the very tags `predict` writes for this file: same words, same chunks, same batches
        tagged = tag_sentences(model, tokenizer, info, words, options.get("batch_size", 32))
        unseen = sum(
            tag != "O" and not t.seen[w]
            for t, gold in zip(tagged, word_tags, strict=True)
            for w, tag in enumerate(gold)
        )
        if unseen:
            _say_unseen(int(unseen), data)
        return score_tags([t.tags for t in tagged], word_tags)

    def is_empty(self, record: dict, info: dict, options: dict) -> bool:
        """A token list with no tokens, or a text with nothing in it."""
        from bertkit.prediction import blank

        field = _tokens_field(record, info)
        if field is not None:
            return not record[field]
        column = options.get("text_column") or info.get("text_column") or "text"
        return column in record and blank(record[column])

    def empty_result(self, model, record: dict, info: dict, options: dict) -> dict:
        """Token-shaped (no tokens, no tags) for a token list, and for a blank line when the
        input's records are token lists or the output is CoNLL; text-shaped (no entities) else."""
        shape = record
        if isinstance(record, Blank):
            shape = record.like if record.like is not None else {}
            if options.get("output_format") == "conll":
                shape = {"tokens": []}
        if _tokens_field(shape, info) is not None:
            return empty_record(record, None, tokens=[], tags=[])
        return empty_record(record, options.get("text_column") or info.get("text_column") or "text", entities=[])

    def predict(self, model, tokenizer, info: dict, records: Iterable[dict], options: dict) -> Iterator[dict]:
        """Text -> entities as character spans; tokens (JSON or CoNLL) -> a tag per token."""
        text_column = options.get("text_column") or info.get("text_column") or "text"
        number = 0
        for chunk in chunks(records, options.get("chunk_size", CHUNK)):
            words, offsets = [], []
            for record in chunk:
                number += 1
                field = _tokens_field(record, info)
                if field is not None:
                    words.append([str(t) for t in record[field]])
                    offsets.append(None)
                elif text_column in record:
                    found = tokenization.words_with_offsets(
                        tokenizer, text_value(record[text_column], place_of(record, number), text_column)
                    )
                    words.append([w for w, _, _ in found])
                    offsets.append([(s, e) for _, s, e in found])
                else:
                    tokens_field = (info.get("ner") or {}).get("tokens_field", "tokens")
                    raise BertkitError(
                        f"{place_of(record, number)}: no '{text_column}' or '{tokens_field}' field (fields: "
                        f"{', '.join(record)}); set --text-column to the field holding the text"
                    )
            tagged = tag_sentences(model, tokenizer, info, words, options.get("batch_size", 32))
            for record, sentence, where, found in zip(chunk, words, offsets, tagged, strict=True):
                yield describe(record, sentence, where, found, text_column)

    def card_summary(self, info: dict) -> str:
        return "IOB2 tags"


TASK = NerTask()


def _tokens_field(record: dict, info: dict) -> str | None:
    """The field of `record` holding its token list (the bundle's `ner.tokens_field`, or
    `tokens`, as CoNLL input gives it), or None for a record that is not a token list."""
    own = (info.get("ner") or {}).get("tokens_field", "tokens")
    return next((field for field in (own, "tokens") if field in record), None)


# ---------------------------------------------------------------- reading


def read_examples(source: DataSource, cfg: Config, role: str) -> list[dict]:
    """Records with `tokens` + `tags`, or `text` + `entities` ({type, start, end}), checked."""
    ner = cfg.ner
    if source.hub:
        ds = data_mod.load_source(source, cfg)
        return [{"tokens": list(r[ner.tokens_field]), "tags": list(r[ner.tags_field])} for r in _hub_tags(ds, ner)]
    from bertkit.data.conll import read_conll
    from bertkit.data.readers import detect_format, read_records

    fmt = detect_format(source.path, source.format)
    if fmt == "conll":
        found = [
            {"tokens": r["tokens"], "tags": r["tags"], "where": f"{source.path}:{r['line']}"}
            for r in read_conll(source.path, ner.token_column, ner.tag_column)
        ]
    else:
        found = []
        for number, record in enumerate(read_records(source.path, fmt), start=1):
            where = f"{source.path}, record {number}"
            if ner.tokens_field in record:
                tokens, tag_seq = record[ner.tokens_field], record.get(ner.tags_field)
                if tag_seq is None or len(tag_seq) != len(tokens):
                    raise BertkitError(
                        f"{where}: '{ner.tags_field}' must list one tag per token ({len(tokens)} tokens)"
                    )
                found.append({"tokens": [str(t) for t in tokens], "tags": [str(t) for t in tag_seq], "where": where})
            elif cfg.data.text_column in record:
                if ner.entities_field not in record:
                    raise BertkitError(
                        f"{where}: no '{ner.entities_field}' field (fields: {', '.join(record)}). Set "
                        "ner.entities_field to the field that lists the entities (a sentence without any "
                        "has an empty list)"
                    )
                text = text_value(record[cfg.data.text_column], where, cfg.data.text_column)
                found.append({"text": text, "entities": _spans(record, ner, text, where), "where": where})
            else:
                raise BertkitError(
                    f"{where}: expected '{ner.tokens_field}' + '{ner.tags_field}', or '{cfg.data.text_column}' + "
                    f"'{ner.entities_field}' (fields there: {', '.join(record)})"
                )
    empty = [r["where"] for r in found if not r.get("tokens", r.get("text"))]
    if empty:
        raise BertkitError(f"{len(empty)} empty sentence(s) in the {role} data, first at {empty[0]}")
    if not found:
        raise BertkitError(f"{source.describe()}: no sentences in this file")
    return found


def require_entities(word_tags: list[list[str]], where: str) -> None:
    """Scoring data without a single entity would score precision and recall of nothing."""
    if not any(tag != "O" for seq in word_tags for tag in seq):
        raise BertkitError(
            f"{where}: the data holds no entities at all, so there is nothing to score. Check the tag "
            "column (ner.tag_column) or the entities field (ner.entities_field)"
        )


def _hub_tags(ds, ner):
    import datasets

    feature = ds.features[ner.tags_field]
    inner = getattr(feature, "feature", None)
    if isinstance(inner, datasets.ClassLabel):
        for row in ds:
            yield {
                ner.tokens_field: row[ner.tokens_field],
                ner.tags_field: [inner.int2str(i) for i in row[ner.tags_field]],
            }
    else:
        yield from ds


def _spans(record: dict, ner, text: str, where: str) -> list[dict]:
    spans = []
    for entity in record.get(ner.entities_field) or []:
        try:
            if ner.span_field:
                start, end = (int(x) for x in entity[ner.span_field])
            else:
                start, end = int(entity[ner.start_field]), int(entity[ner.end_field])
            kind = str(entity[ner.type_field])
        except (KeyError, TypeError, ValueError):
            needs = f"'{ner.start_field}', '{ner.end_field}'"
            if ner.span_field:
                needs = f"'{ner.span_field}' ([start, end])"
            raise BertkitError(f"{where}: each entity needs {needs} and '{ner.type_field}' (got {entity})") from None
        if not 0 <= start < end <= len(text):
            raise BertkitError(f"{where}: entity {entity} lies outside the text ({len(text)} characters)")
        spans.append({"type": kind, "start": start, "end": end})
    spans.sort(key=lambda s: s["start"])
    for a, b in zip(spans, spans[1:], strict=False):
        if b["start"] < a["end"]:
            raise BertkitError(f"{where}: entities overlap: {a} and {b}; keep one of them")
    return spans


def _detect(sequences, role: str) -> str:
    try:
        return tags.detect_scheme([list(seq) for seq in sequences])
    except ValueError as err:
        raise BertkitError(f"{role} data: '{err}' is not a tag (expected O, B-X, I-X, E-X, S-X, ...)") from None


def _normalise(split, scheme: str, role: str):
    repaired = 0
    fixed = []
    for seq in split["tags"]:
        try:
            result = tags.to_iob2(seq, scheme)
        except ValueError as err:
            raise BertkitError(
                f"{role} data: '{err}' is not a tag of the {scheme} scheme (expected O, B-X, I-X, ...)"
            ) from None
        repaired += result.repaired
        fixed.append(result.tags)
    if repaired:
        console.print(
            f"[yellow]warning:[/yellow] {role} data: {repaired} tag(s) did not fit {scheme} and were repaired"
        )
    return split.remove_columns("tags").add_column("tags", fixed)


def _words_and_tags(split, tokenizer, role: str) -> tuple[list[list[str]], list[list[str]]]:
    if "tags" in split.column_names:
        return [list(t) for t in split["tokens"]], [list(t) for t in split["tags"]]
    words, word_tags, unaligned = [], [], 0
    for text, spans in zip(split["text"], split["entities"], strict=True):
        found = tokenization.words_with_offsets(tokenizer, text)
        seq = ["O"] * len(found)
        for span in spans:
            inside = [i for i, (_, s, e) in enumerate(found) if s < span["end"] and e > span["start"]]
            if not inside:
                continue
            unaligned += found[inside[0]][1] != span["start"] or found[inside[-1]][2] != span["end"]
            for k, i in enumerate(inside):
                seq[i] = f"{'B' if k == 0 else 'I'}-{span['type']}"
        words.append([w for w, _, _ in found])
        word_tags.append(seq)
    if unaligned:
        console.print(
            f"[yellow]warning:[/yellow] {role} data: {unaligned} entity span(s) cut through a word; "
            "whole words were labelled"
        )
    return words, word_tags


def _tag_ids(word_tags: list[list[str]], info: dict, role: str) -> list[list[int]]:
    index = {name: i for i, name in enumerate(info["labels"])}
    out = []
    for number, seq in enumerate(word_tags, start=1):
        for tag in seq:
            if tag not in index:
                raise BertkitError(
                    f"{role} data, sentence {number}: tag '{tag}' is not one the model knows "
                    f"({', '.join(info['labels'])}). Fix the data, or list every tag in data.labels."
                )
        out.append([index[t] for t in seq])
    return out


# ---------------------------------------------------------------- sub-words and windows


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
        _say_unseen(unseen, role)
    return features


def _say_unseen(count: int, role: str) -> None:
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


# ---------------------------------------------------------------- tags from model rows


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
    clusters = graphemes.Graphemes(text)
    confidence = tagged.probs.max(-1) if len(tagged.probs) else np.zeros(0)
    entities = []
    for kind, first, last in tags.entities(tagged.tags):
        # whole characters: an entity ends after the marks of its last character
        start, end = clusters.snap(offsets[first][0], offsets[last - 1][1])
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

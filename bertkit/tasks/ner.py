"""Named-entity recognition: CoNLL columns, token/tag JSON, character-span data, raw text.

Every input becomes words with IOB2 tags (and, when there is a text, the words' character
offsets, found by the tokenizer's own pre-tokenizer). Sentences longer than the model's limit are
cut into overlapping sub-word windows; each word is labelled and predicted in exactly one window
(the one where it sits most centrally), so nothing is dropped and nothing is counted twice.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

import numpy as np

from bertkit import data as data_mod
from bertkit import metrics, models, tags, tokenization
from bertkit.config import Config, DataSource
from bertkit.errors import BertkitError
from bertkit.inference import chunks, empty_record, forward, softmax
from bertkit.progress import console

IGNORE = -100


class NerTask:
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
            features = encode_words(tokenizer, words, info, _tag_ids(word_tags, info, role))
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
        import torch
        from transformers import DataCollatorForTokenClassification

        multiple = cfg.train.pad_to_multiple_of or (8 if torch.cuda.is_available() else None)
        return DataCollatorForTokenClassification(tokenizer, pad_to_multiple_of=multiple)

    def best_metric(self, info: dict) -> str:
        return "f1"

    def metric_names(self, info: dict) -> list[str]:
        names = ["precision", "recall", "f1"]
        return [*names, "token_accuracy", *[f"lenient_{n}" for n in names]]

    def loss(self, info: dict, cfg: Config, train):
        return None

    def metric_fn(self, info: dict, features, examples):
        """Exact entity-level scores of a Trainer prediction on `features`: window predictions
        merged back into whole sentences before seqeval sees them."""
        columns = {k: features[k] for k in ("example", "word_index", "labels")}
        return lambda prediction: self.score_rows([np.asarray(r) for r in prediction.predictions], columns, info)

    def score_rows(self, logits_rows: list, features, info: dict) -> dict:
        names = info["labels"]
        predicted = merge_windows(features, [row.argmax(-1) for row in logits_rows])
        references = merge_windows(features, [np.asarray(r) for r in features["labels"]])
        preds = [[names[i] for i in predicted[k]] for k in sorted(references)]
        refs = [[names[i] for i in references[k]] for k in sorted(references)]
        return metrics.load("ner").compute(predictions=preds, references=refs)

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
        features = encode_words(tokenizer, words, info, _tag_ids(word_tags, info, data))
        logits = forward(model, tokenizer, features, options.get("batch_size", 32))
        columns = {k: [f[k] for f in features] for k in ("example", "word_index", "labels")}
        return self.score_rows(logits, columns, info)

    def is_empty(self, record: dict, info: dict, options: dict) -> bool:
        """A token list with no tokens, or a text with nothing in it."""
        from bertkit.prediction import blank

        tokens_field = (info.get("ner") or {}).get("tokens_field", "tokens")
        for field in (tokens_field, "tokens"):
            if field in record:
                return not record[field]
        column = options.get("text_column") or info.get("text_column") or "text"
        return column in record and blank(record[column])

    def empty_result(self, model, record: dict, info: dict, options: dict) -> dict:
        tokens_field = (info.get("ner") or {}).get("tokens_field", "tokens")
        if tokens_field in record or "tokens" in record:
            return empty_record(record, None, tokens=[], tags=[])
        return empty_record(record, options.get("text_column") or info.get("text_column") or "text", entities=[])

    def predict(self, model, tokenizer, info: dict, records: Iterable[dict], options: dict) -> Iterator[dict]:
        """Text -> entities as character spans; tokens (JSON or CoNLL) -> a tag per token."""
        text_column = options.get("text_column") or info.get("text_column") or "text"
        tokens_field = (info.get("ner") or {}).get("tokens_field", "tokens")
        names = info["labels"]
        for chunk in chunks(records, options.get("chunk_size", 512)):
            words, offsets = [], []
            for record in chunk:
                if tokens_field in record or "tokens" in record:
                    words.append([str(t) for t in record.get(tokens_field, record.get("tokens"))])
                    offsets.append(None)
                elif text_column in record:
                    found = tokenization.words_with_offsets(tokenizer, str(record[text_column] or ""))
                    words.append([w for w, _, _ in found])
                    offsets.append([(s, e) for _, s, e in found])
                else:
                    raise BertkitError(
                        f"input record has neither '{text_column}' nor '{tokens_field}' (fields: {', '.join(record)})"
                    )
            features = encode_words(tokenizer, words, info, None)
            logits = forward(model, tokenizer, features, options.get("batch_size", 32))
            columns = {k: [f[k] for f in features] for k in ("example", "word_index")}
            probs = merge_windows(columns, [softmax(row) for row in logits], keep_rows=True)
            for index, record in enumerate(chunk):
                word_probs = probs.get(index, np.zeros((0, len(names))))
                word_ids = list(word_probs.argmax(-1)) if len(word_probs) else []
                # words with no sub-word (e.g. a lone control character) are outside entities
                word_ids += [0] * (len(words[index]) - len(word_ids))
                predicted = tags.to_iob2([names[i] for i in word_ids], "IOB2").tags
                yield describe(record, words[index], offsets[index], predicted, word_probs, text_column)


TASK = NerTask()


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
                text = str(record[cfg.data.text_column] or "")
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


def encode_words(tokenizer, words: list[list[str]], info: dict, labels: list[list[int]] | None) -> list[dict]:
    """Model features for word sequences: windows of sub-words, each word owned by one window."""
    budget = info["max_length"] - tokenization.special_budget(tokenizer)
    stride = min(info.get("stride", 32), budget // 2)
    prefix = tokenization.prefix_length(tokenizer)
    all_subwords = info.get("label_all_subwords", False)
    names = info["labels"]
    features = []
    for example, (ids, word_ids) in enumerate(tokenization.subwords_of_words(tokenizer, words)):
        first: dict[int, int] = {}
        for pos, w in enumerate(word_ids):
            if w is not None and w not in first:
                first[w] = pos
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
                    if labels is not None:
                        label_row[slot] = labels[example][w]
                elif all_subwords and labels is not None:
                    tag = names[labels[example][w]]
                    label_row[slot] = names.index("I-" + tag[2:]) if tag.startswith("B-") else labels[example][w]
            feature["word_index"] = word_index
            feature["example"] = example
            if labels is not None:
                feature["labels"] = label_row
            features.append(feature)
    return features


def _owning_window(spans: list[tuple[int, int]], pos: int) -> int:
    """The window in which position `pos` has the most context on both sides."""

    def margin(k: int) -> int:
        start, end = spans[k]
        return min(pos - start, end - 1 - pos) if start <= pos < end else -1

    return max(range(len(spans)), key=margin)


def merge_windows(features, rows: list, keep_rows: bool = False) -> dict[int, np.ndarray]:
    """Per example, the value at each word's owning position, in word order."""
    by_example: dict[int, dict[int, object]] = {}
    for example, word_index, row in zip(features["example"], features["word_index"], rows, strict=True):
        words = by_example.setdefault(example, {})
        for slot, w in enumerate(word_index):
            if w >= 0:
                words[w] = row[slot]
    merged = {}
    for example, words in by_example.items():
        ordered = [words[w] for w in sorted(words)]
        merged[example] = np.stack(ordered) if keep_rows and ordered else np.asarray(ordered, dtype=int)
    return merged


def describe(
    record: dict, words: list[str], offsets, predicted: list[str], word_probs: np.ndarray, text_column: str
) -> dict:
    out = {k: record[k] for k in ("id",) if k in record}
    confidence = word_probs.max(-1) if len(word_probs) else np.zeros(0)
    if offsets is None:
        out["tokens"] = words
        out["tags"] = predicted
        if "rows" in record:
            out["rows"] = record["rows"]
        return out
    text = str(record[text_column] or "")
    out["text"] = text
    out["entities"] = [
        {
            "type": kind,
            "start": offsets[first][0],
            "end": offsets[last - 1][1],
            "text": text[offsets[first][0] : offsets[last - 1][1]],
            "score": round(float(confidence[first:last].mean()), 6) if len(confidence) >= last else None,
        }
        for kind, first, last in tags.entities(predicted)
    ]
    return out

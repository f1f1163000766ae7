"""The ner task: the contract's methods (bertkit/tasks/base.py), over the package's helpers."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING

import numpy as np

from bertkit.core import data as data_mod
from bertkit.core import losses, models, tokenization
from bertkit.core.data.records import Blank, blank, place_of, text_value
from bertkit.core.data_settings import DataSource
from bertkit.core.errors import BertkitError, RecordError
from bertkit.core.inference import chunks, empty_record
from bertkit.core.outputs.records import conll_cell_error
from bertkit.core.progress import console
from bertkit.core.run_info import RunInfo, check_labels
from bertkit.tasks.base import Task, pad_multiple
from bertkit.tasks.ner import inspecting, tags
from bertkit.tasks.ner.character_scores import on_characters
from bertkit.tasks.ner.explaining import EXPLAINER
from bertkit.tasks.ner.reading import (
    NerSplits,
    ner_format,
    normalise_scheme,
    read_examples,
    repair_note,
    require_entities,
    scheme_for,
    scheme_of,
    tokens_field_of,
    tokens_value,
    words_and_tags,
)
from bertkit.tasks.ner.scored import Tagged
from bertkit.tasks.ner.settings import NerConfig
from bertkit.tasks.ner.tagging import (
    CHUNK,
    describe,
    encode_words,
    say_unseen,
    score_tags,
    tag_ids,
    tag_sentences,
    tag_words,
)
from bertkit.tasks.options import EvaluateOptions, PredictOptions

if TYPE_CHECKING:
    from bertkit.config import Config


def _tag_or_type(name: str) -> str:
    """A name of ner.class_weights: a tag in bertkit's spelling (`B_PER` -> `B-PER`), or a type."""
    try:
        return tags.normal_tag(name)
    except ValueError:
        return name


class NerTask(Task):
    name = "ner"
    auto_model = "AutoModelForTokenClassification"
    onnx_per_token = True  # a row of tag logits per token

    def explainer(self):

        return EXPLAINER
    records_per_pass = CHUNK  # as evaluate tags them: the same batches, so the same tags

    # ------------------------------------------------------------ data

    def load(self, cfg: Config):
        """The splits, tags in IOB2: the scheme is `ner.scheme`, or the one the training file's tags
        are in (detected as it is read, before a validation share is split off), and every split is
        read in it; what was found goes with the splits (`NerSplits.tag_scheme`) into setup."""
        given = None if cfg.ner.scheme == "auto" else cfg.ner.scheme
        found: dict = {"scheme": None, "detected": given is None, "repaired": {}}

        def read(source: DataSource, role: str):
            import datasets

            split = datasets.Dataset.from_list(read_examples(source, cfg.ner, cfg.data.text_column, role))
            if "tags" not in split.column_names:
                return split
            if role == "train":
                found["scheme"] = given or scheme_of(split["tags"], role)
            split, found["repaired"][role] = normalise_scheme(split, found["scheme"] or given or "IOB2", role)
            return split

        splits = NerSplits(data_mod.load_splits(cfg, read))
        splits.tag_scheme = found if found["scheme"] else None
        return splits

    def data_format(self, source) -> str:

        return ner_format(source)

    def gold_fields(self, info: RunInfo) -> list[str]:
        ner = info.get("ner") or {}
        return [ner.get("tags_field") or "tags", ner.get("entities_field") or "entities"]

    def data_warnings(self, info: RunInfo) -> list[str]:
        """Tags of the data that did not fit its scheme (repaired to IOB2)."""
        found = info.get("tag_scheme") or {}
        return [repair_note(role, n, found["scheme"]) for role, n in (found.get("repaired") or {}).items() if n]

    def setup(self, ds, cfg: Config) -> dict:
        train = ds["train"]
        if cfg.data.labels:
            types = tags.entity_types(cfg.data.labels)
        elif "tags" in train.column_names:
            types = sorted({t[2:] for seq in train["tags"] for t in seq if t != "O"})
        else:
            types = sorted({e["type"] for ents in train["entities"] for e in ents})
        if not types:
            raise BertkitError(
                "the training data has no entities at all: nothing to learn. Check ner.tag_column / the tags"
            )
        found = getattr(ds, "tag_scheme", None)
        return {
            "task": self.name,
            "labels": tags.label_list(types),
            **({"tag_scheme": found} if found else {}),
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
            words, word_tags = words_and_tags(split, tokenizer, role)
            features = encode_words(tokenizer, words, info, tag_ids(word_tags, info, role, split), role)
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

    def loss(self, info: dict, cfg: Config, train):
        """Tag weights and / or focal loss (bertkit/core/losses.py) over the sub-words that carry a tag
        (-100 positions skipped) when the config asks, else None (the model's own loss)."""

        spec, kind = cfg.ner.class_weights, cfg.ner.loss
        if spec is None and kind == losses.CROSS_ENTROPY:
            return None
        names = info["labels"]
        weights = None
        if spec == "balanced":
            counts = np.bincount(
                [i for row in train["labels"] for i in row if i != losses.IGNORE], minlength=len(names)
            )
            weights = losses.balanced(counts.tolist())
        elif spec is not None:
            groups: dict[str, list[str]] = {}
            for name in names[1:]:
                groups.setdefault(tags.split_tag(name)[1], []).append(name)
            if isinstance(spec, dict):  # tag names as the data may spell them (B_PER): as the bundle does
                spec = {_tag_or_type(str(name)): weight for name, weight in spec.items()}
            weights = losses.resolve(spec, names, "ner.class_weights", "tag", groups)
        return losses.loss_function(kind, cfg.ner.focal_gamma, weights, names, spec)

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

    # ------------------------------------------------------------ inspecting the data

    def inspect_view(self, split, cfg: Config, info: RunInfo):

        return inspecting.view(split)

    def inspect_checks(self, ds, tokenizer, info: RunInfo, cfg: Config):

        return inspecting.checks(ds, tokenizer, info, cfg)

    # ------------------------------------------------------------ evaluate and predict

    def evaluate(self, model, tokenizer, info: RunInfo, data: str, options: EvaluateOptions) -> dict:
        return self.evaluate_examples(model, tokenizer, info, data, options).score()

    def evaluate_examples(self, model, tokenizer, info: RunInfo, data: str, options: EvaluateOptions) -> Tagged:
        """The tags the model gives each sentence of `data`, beside the gold ones."""
        import datasets


        ner = NerConfig.model_validate(info.get("ner") or {})
        source = options.source(data)
        records = options.sampled(read_examples(source, ner, info.get("text_column") or "text", "evaluation"))
        split = datasets.Dataset.from_list(records)
        if "tags" in split.column_names:
            recorded = (info.get("tag_scheme") or {}).get("scheme")
            scheme = scheme_for(split["tags"], ner.scheme, recorded, data)
            split, repaired = normalise_scheme(split, scheme, data)
            if repaired:
                console.print(f"[yellow]warning:[/yellow] {repair_note(data, repaired, scheme)}")
        spans = "entities" in split.column_names  # character spans: scored as the data gives them
        cut = "entities are scored on the characters the data gives, which tags of whole words cannot match"
        words, word_tags = words_and_tags(split, tokenizer, data, *([cut] if spans else []))
        require_entities(word_tags, data)
        tag_ids(word_tags, info, data, split)  # every gold tag must be one the model knows
        # the very tags `predict` writes for this file: same words, same chunks, same batches
        tagged = tag_sentences(model, tokenizer, info, words, options.batch_size)
        unseen = sum(
            tag != "O" and not t.seen[w]
            for t, gold in zip(tagged, word_tags, strict=True)
            for w, tag in enumerate(gold)
        )
        if unseen:
            say_unseen(int(unseen), data)
        if spans:

            return on_characters(split["text"], split["entities"], [t.tags for t in tagged], tokenizer)
        return Tagged([t.tags for t in tagged], word_tags, score_tags)

    def check_info(self, root, file, info: dict, complete: bool) -> None:
        check_labels(root, file, info)

    def is_empty(self, record: dict, info: RunInfo, options: PredictOptions) -> bool:
        """A token list with no tokens, or a text with nothing in it."""
        field = tokens_field_of(record, info)
        if field is not None:
            return not record[field]
        column = options.text_field(info)
        return column in record and blank(record[column])

    def check_record(self, record, tokenizer, info: RunInfo, options: PredictOptions, where: str, seen: dict) -> None:
        """A token list (of words), or a text."""
        field = tokens_field_of(record, info)
        if field is not None:
            tokens_value(record[field], where, field)
            return
        column = options.text_field(info)
        if column not in record:
            raise _no_text(record, where, column, info)
        text_value(record[column], where, column)

    def empty_result(self, model, record: dict, info: RunInfo, options: PredictOptions) -> dict:
        """Token-shaped (no tokens, no tags) for a token list, and for a blank line when the
        input's records are token lists or the output is CoNLL; text-shaped (no entities) else."""
        shape = record
        if isinstance(record, Blank):
            shape = record.like if record.like is not None else {}
            if options.output_format == "conll":
                shape = {"tokens": []}
        if tokens_field_of(shape, info) is not None:
            return empty_record(record, None, tokens=[], tags=[])
        return empty_record(record, options.text_field(info), entities=[])

    def predict(
        self, model, tokenizer, info: RunInfo, records: Iterable[dict], options: PredictOptions
    ) -> Iterator[dict]:
        """Text -> entities as character spans; tokens (JSON or CoNLL) -> a tag per token."""
        text_column = options.text_field(info)
        number = 0
        for chunk in chunks(records, self.records_per_pass):
            words, offsets = [], []
            for record in chunk:
                number += 1
                field = tokens_field_of(record, info)
                if field is not None:
                    words.append(tokens_value(record[field], place_of(record, number), field))
                    offsets.append(None)
                    if options.output_format == "conll" and "rows" not in record:
                        check_conll_tokens(words[-1], place_of(record, number))
                elif text_column in record:
                    found = tokenization.words_with_offsets(
                        tokenizer, text_value(record[text_column], place_of(record, number), text_column)
                    )
                    words.append([w for w, _, _ in found])
                    offsets.append([(s, e) for _, s, e in found])
                else:
                    raise _no_text(record, place_of(record, number), text_column, info)
            tagged = tag_sentences(model, tokenizer, info, words, options.batch_size)
            for record, sentence, where, found in zip(chunk, words, offsets, tagged, strict=True):
                yield describe(record, sentence, where, found, text_column)

    def card_summary(self, info: dict) -> str:
        found = info.get("tag_scheme")
        return f"IOB2 tags (trained on {found['scheme']} data, read as IOB2)" if found else "IOB2 tags"


TASK = NerTask()


def _no_text(record: dict, where: str, text_column: str, info: RunInfo) -> RecordError:
    tokens_field = (info.get("ner") or {}).get("tokens_field", "tokens")
    return RecordError(
        f"{where}: no '{text_column}' or '{tokens_field}' field (fields: {', '.join(map(str, record)) or 'none'}); "
        "set --text-column to the field holding the text",
        text_column,
    )


def check_conll_tokens(tokens: list[str], where: str) -> None:
    """Refused before the model runs, naming the input's line: a token that CoNLL output cannot
    carry (the writer checks every row by the same rule)."""

    for position, token in enumerate(tokens):
        error = conll_cell_error(token, position, where)
        if error:
            raise error


# ---------------------------------------------------------------- reading


# ---------------------------------------------------------------- sub-words and windows


# ---------------------------------------------------------------- tags from model rows

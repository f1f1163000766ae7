"""How NER trains: sentences read with their tag scheme, words split into sub-words and aligned
with their tags, the model, the loss and entity-level metrics."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from bertkit.core import data as data_mod
from bertkit.core import losses, models
from bertkit.core.data_settings import DataSource
from bertkit.core.errors import BertkitError
from bertkit.core.run_info import RunInfo
from bertkit.tasks.contract import Training, pad_multiple
from bertkit.tasks.ner import tags
from bertkit.tasks.ner.reading import (
    NerSplits,
    normalise_scheme,
    read_examples,
    repaired_tags,
    scheme_of,
    words_and_tags,
)
from bertkit.tasks.ner.settings import NerConfig
from bertkit.tasks.ner.tagging import (
    encode_words,
    score_tags,
    tag_ids,
    tag_words,
)

if TYPE_CHECKING:
    from bertkit.core.run_config import RunConfig


def _tag_or_type(name: str) -> str:
    """A name of ner.class_weights: a tag in bertkit's spelling (`B_PER` -> `B-PER`), or a type."""
    try:
        return tags.normal_tag(name)
    except ValueError:
        return name


class NerTraining(Training):
    def load(self, cfg: RunConfig):
        """The splits, tags in IOB2: the scheme is `ner.scheme`, or the one the training file's tags
        are in (detected as it is read, before a validation share is split off), and every split is
        read in it; what was found goes with the splits (`NerSplits.tag_scheme`) into setup."""
        given = None if cfg.section(NerConfig).scheme == "auto" else cfg.section(NerConfig).scheme
        found: dict = {"scheme": None, "detected": given is None, "repaired": {}}

        def read(source: DataSource, role: str):
            import datasets

            rows = read_examples(source, cfg.section(NerConfig), cfg.data.text_column, role)
            split = datasets.Dataset.from_list(rows)
            if "tags" not in split.column_names:
                return split
            if role == "train":
                found["scheme"] = given or scheme_of(split["tags"], role)
            split, found["repaired"][role] = normalise_scheme(split, found["scheme"] or given or "IOB2", role)
            return split

        splits = NerSplits(data_mod.load_splits(cfg, read))
        splits.tag_scheme = found if found["scheme"] else None
        return splits

    def data_warnings(self, info: RunInfo) -> list[str]:
        """Tags of the data that did not fit its scheme (repaired to IOB2)."""
        return repaired_tags(info)

    def setup(self, ds, cfg: RunConfig) -> dict:
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
            "task": "ner",
            "labels": tags.label_list(types),
            **({"tag_scheme": found} if found else {}),
            "max_length": cfg.model.max_length,
            "stride": cfg.section(NerConfig).stride,
            "label_all_subwords": cfg.section(NerConfig).label_all_subwords,
            "text_column": cfg.data.text_column,
            "ner": cfg.section(NerConfig).model_dump(),
        }

    def prepare(self, ds, tokenizer, info: dict):
        import datasets

        prepared = {}
        for role, split in ds.items():
            words, word_tags = words_and_tags(split, tokenizer, role)
            features = encode_words(tokenizer, words, info, tag_ids(word_tags, info, role, split), role)
            prepared[role] = datasets.Dataset.from_list(features)
        return datasets.DatasetDict(prepared)

    def build_model(self, source: str, info: dict, cfg: RunConfig):
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

    def collator(self, tokenizer, cfg: RunConfig):
        from transformers import DataCollatorForTokenClassification

        return DataCollatorForTokenClassification(tokenizer, pad_to_multiple_of=pad_multiple(cfg))

    def loss(self, info: dict, cfg: RunConfig, train):
        """Tag weights and / or focal loss (bertkit/core/losses.py) over the sub-words that carry a tag
        (-100 positions skipped) when the config asks, else None (the model's own loss)."""

        spec, kind = cfg.section(NerConfig).class_weights, cfg.section(NerConfig).loss
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
        return losses.loss_function(kind, cfg.section(NerConfig).focal_gamma, weights, names, spec)

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

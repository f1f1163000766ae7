"""`classify.strategy`: which route a classify run takes, plain fine-tuning or the contrastive
few-shot route (bertkit/tasks/classify/contrastive.py), decided once from the training data and
recorded in bertkit.json (`strategy`)."""

from __future__ import annotations

from dataclasses import dataclass

from bertkit.core import models
from bertkit.core.errors import BertkitError
from bertkit.core.freezing import freeze
from bertkit.core.pooled_head import POOLING_KEY
from bertkit.core.progress import console
from bertkit.core.run_info import read_json
from bertkit.core.sharding import is_main
from bertkit.tasks import registry
from bertkit.tasks.classify.labels import REGRESSION
from bertkit.tasks.classify.settings import ClassifyConfig
from bertkit.tasks.embed.encoder import hub_settings, model_settings

FINETUNE, CONTRASTIVE = "finetune", "contrastive"


@dataclass(frozen=True)
class ContrastiveSettings:
    """What the contrastive route reads from the config."""

    batch_size: int
    learning_rate: float
    pair_rounds: int
    seed: int
    max_steps: int | None = None  # train.max_steps: the pass over the pairs stops there (smoke runs)
    head_c: float = 1.0  # the logistic regression's inverse regularisation (scikit-learn's default)
    pooling: str = "mean"  # the sentence vector tuned and classified (bertkit/core/pooled_head.py)
    logging_steps: int = 20  # train.logging_steps: the pair loss is logged as its mean over this many steps

    @classmethod
    def of(cls, cfg) -> ContrastiveSettings:
        c, t = cfg.section(ClassifyConfig), cfg.train
        pooling = source_pooling(cfg.model.name, cfg.model.revision)
        return cls(
            t.batch_size,
            c.contrastive_learning_rate,
            c.pair_rounds,
            t.seed,
            t.max_steps,
            pooling=pooling,
            logging_steps=t.logging_steps,
        )


def source_pooling(name: str, revision: str | None = None) -> str:
    """The sentence vector of the model trained from: [CLS] when it is a classify bundle that reads
    [CLS] or a sentence encoder whose sentence-transformers files pool [CLS] (a Hub model's fetched
    into the cache), the mean of the tokens otherwise."""
    from pathlib import Path


    try:
        folder = Path(models.resolve(name, revision)).expanduser()  # a packaged model's name is its folder
    except BertkitError:  # not here: loading it says so
        folder = Path(name).expanduser()
    if not folder.is_dir():  # a Hub id: its files fetched into the cache, or a note that they cannot be read
        return "cls" if hub_settings(name, None, False, revision, note=True).pooling == "cls" else "mean"
    if not (folder / "config.json").is_file():
        return "mean"
    recorded = read_json(folder / "config.json", "restore it from the original model").get(POOLING_KEY)
    if recorded:
        return recorded
    return "cls" if model_settings(str(folder), None, pooling_needed=False).pooling == "cls" else "mean"


NO_PAIRS = (
    "no pairs can be made from the labels: a pair needs two examples that share a label and one that does not "
    "have it"
)


def choose(cfg, problem: str, n_labels: int, label_count: int, pairable: bool = True) -> tuple[str, str]:
    """The route and why, from the config and the training data (`label_count`: its labels
    counted over examples, an example once for each of its labels; `pairable`: whether the labels
    make any pair, label_pairs.can_pair)."""
    asked, c = cfg.section(ClassifyConfig).strategy, cfg.section(ClassifyConfig)
    pairs = bool(cfg.data.text_pair_column)
    weighted = "classify.class_weights" if c.class_weights is not None else None
    weighted = weighted or ("classify.loss: focal" if c.loss != "cross_entropy" else None)
    adapter = cfg.train.adapter is not None
    if asked == CONTRASTIVE:
        if adapter:
            raise BertkitError(
                "classify.strategy: contrastive tunes the whole encoder on pairs, and train.adapter is set: an adapter "
                "is trained by fine-tuning. Set classify.strategy: finetune, or remove train.adapter"
            )
        if pairs:
            raise BertkitError(
                "classify.strategy: contrastive works on single texts, and data.text_pair_column is set: pairs of "
                "texts (NLI, paraphrase) are classified by plain fine-tuning. Set classify.strategy: finetune, or "
                "remove data.text_pair_column"
            )
        if problem == REGRESSION:
            raise BertkitError(
                "classify.strategy: contrastive makes its pairs from labels, and the data is a regression (number "
                "labels). Set classify.strategy: finetune, or classify.problem_type: single_label"
            )
        if weighted:
            raise BertkitError(
                f"classify.strategy: contrastive fits its head by logistic regression, so {weighted} (a fine-tuning "
                "loss setting) would be ignored. Remove it, or set classify.strategy: finetune"
            )
        if problem != REGRESSION and not pairable:
            raise BertkitError(
                f"classify.strategy: contrastive tunes the encoder on pairs, and {NO_PAIRS} in the training data. "
                "Add examples, or set classify.strategy: finetune"
            )
        return CONTRASTIVE, "asked for"
    if asked == FINETUNE:
        return FINETUNE, "asked for"
    if adapter:
        return FINETUNE, "auto: an adapter (train.adapter) is fine-tuned"
    if pairs:
        return FINETUNE, "auto: pairs of texts are fine-tuned"
    if weighted:
        return FINETUNE, f"auto: {weighted} is a fine-tuning loss setting"
    if problem == REGRESSION:
        return FINETUNE, "auto: regression is fine-tuned"
    limit = c.few_shot_examples
    # counts of examples are whole numbers: the labels over the data against the limit a label, not
    # an average ("33674.5 examples per label"); the same test as the average against the limit
    examples = f"{label_count:,} example" + ("s" if label_count != 1 else "")
    shown = f"{examples} for {n_labels} label" + ("s" if n_labels != 1 else "")
    if label_count > limit * max(n_labels, 1):
        return FINETUNE, f"auto: {shown}, more than classify.few_shot_examples ({limit}) a label"
    if not pairable:
        return FINETUNE, f"auto: {shown}, but {NO_PAIRS}"
    return CONTRASTIVE, f"auto: {shown}, at most classify.few_shot_examples ({limit}) a label"


# train.* settings of fine-tuning that the contrastive route does not read (it reads train.batch_size,
# train.seed, train.max_steps, train.logging_steps, the freezing keys, and its own classify.* keys;
# it tunes in fp32)
FINE_TUNING_ONLY = (
    "epochs",
    "learning_rate",
    "head_learning_rate",
    "gradient_accumulation_steps",
    "weight_decay",
    "warmup_ratio",
    "lr_scheduler",
    "max_grad_norm",
    "early_stopping_patience",
    "eval_strategy",
    "eval_steps",
    "metric_for_best_model",
    "group_by_length",
    "precision",
    "compile",
    "pad_to_multiple_of",
    "dataloader_workers",
    "report_to",
)
# classify.* settings that only the contrastive route reads
CONTRASTIVE_ONLY = ("contrastive_learning_rate", "pair_rounds")
# what the contrastive route's tuning reads, as messages name it
CONTRASTIVE_READS = "classify.contrastive_learning_rate, classify.pair_rounds and train.batch_size"


def unread_keys(route: str, frozen: bool = False) -> list[tuple[str, str]]:
    """(section, key) of each setting `route` does not read: fine-tuning's on the contrastive route,
    the contrastive route's own on fine-tuning. `frozen`: the freezing keys hold the whole encoder,
    so the contrastive route tunes nothing and fits its head only: its own keys and the batch (which
    only groups the texts it encodes) do nothing either."""
    if route == CONTRASTIVE:
        tuning = ([("classify", key) for key in CONTRASTIVE_ONLY] + [("train", "batch_size")]) if frozen else []
        return [("train", key) for key in FINE_TUNING_ONLY] + tuning
    return [("classify", key) for key in CONTRASTIVE_ONLY]


def frozen_in_every_trial(cfg, space: dict | None = None) -> bool:
    """Whether the freezing keys hold the whole encoder in every run: with the config's values, and
    with each value `space` (tune.space) searches for them. The model is built from its config on
    the meta device (no weights read, no memory) and frozen as training freezes it
    (`core.freezing.freeze`, whose refusals are training's): frozen when no parameter of its encoder but
    the pooler can learn. Counting layers is not enough: MPNet's relative attention bias,
    DeBERTa's relative embeddings and ELECTRA's embedding projection lie outside what it freezes,
    and the contrastive route tunes them (contrastive.moves_vectors)."""
    from types import SimpleNamespace

    space = space or {}

    def values(key: str) -> list:
        searched = space.get(f"train.{key}")
        if searched is None:
            return [getattr(cfg.train, key)]
        return list(searched.choices) if searched.choices is not None else [searched.low, searched.high]

    embeddings, layers = values("freeze_embeddings"), values("freeze_layers")
    if not all(embeddings) or not all(layers) or cfg.model.name is None:
        return False
    import torch
    from transformers import AutoConfig, AutoModelForSequenceClassification


    trusted = cfg.model.trust_remote_code
    try:
        config = models.from_pretrained(AutoConfig, models.resolve(cfg.model.name, cfg.model.revision), trusted)
        with torch.device("meta"):
            model = AutoModelForSequenceClassification.from_config(config, trust_remote_code=trusted)
    except Exception:  # a model that cannot be built from its config here: not judged (training says why)
        return False
    freeze(model, SimpleNamespace(freeze_embeddings=True, freeze_layers=min(layers)))
    encoder = getattr(model, model.base_model_prefix)
    return not any(p.requires_grad for name, p in encoder.named_parameters() if not name.startswith("pooler."))


def unused_settings(cfg, route: str = CONTRASTIVE) -> list[str]:
    """The settings the run's config changes from their defaults (the task's, else the field's)
    that `route` will not use."""

    defaults = registry.record(cfg.task).defaults

    def default(section: str, key: str):
        field = type(getattr(cfg, section)).model_fields[key]
        return defaults.get((section, key), field.get_default(call_default_factory=True))

    return [
        f"{section}.{key}"
        for section, key in unread_keys(route)
        if getattr(getattr(cfg, section), key) != default(section, key)
    ]


def warn_unused(cfg, route: str = CONTRASTIVE) -> None:

    unused = unused_settings(cfg, route)
    if not unused or not is_main():
        return
    if route == CONTRASTIVE:
        console.print(
            f"warning: the contrastive route does not use {', '.join(unused)} (fine-tuning settings); it reads "
            f"{CONTRASTIVE_READS}, with train.seed and train.logging_steps. Set classify.strategy: finetune to "
            "fine-tune with them"
        )
    else:
        console.print(
            f"warning: fine-tuning does not use {', '.join(unused)} (settings of the contrastive route, "
            "classify.strategy: contrastive)"
        )


def say(route: str, why: str) -> None:

    if is_main():  # one line, not one a process
        console.print(f"classify strategy: {route} ({why})")

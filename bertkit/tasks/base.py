"""The task contract: what `training.train`, `bertkit predict`, `bertkit evaluate` and the model
card ask of a task. A task subclasses `Task`, implements the methods marked *required*, and
overrides an optional hook only where its default does not fit. Its module exposes the instance
as `TASK`, and a registry record (bertkit/tasks/registry.py) names the module.

`info` is the run's description (`bertkit.core.run_info.RunInfo`, a read-only mapping): built from
what `setup` returns (and `tokenizer_facts`, once the tokenizer is known), saved as the bundle's
`bertkit.json`, and handed back to `predict` / `evaluate` when the bundle is used. No hook can
change it; none needs to.

The path of a training run, in the order the hooks are called:
`load` → `setup` → `metric_names` / `best_metric` → `new_tokenizer` → `tokenizer_facts` → `prepare` →
`build_model` → `collator`, `loss`, `reduce_logits`, `metric_fn` (the Trainer's parts) →
(`scores_before_training`: scored once before) → training → `compare` → `export` (the bundle).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bertkit.core.data import WHERE, column
from bertkit.core.data.formats import detect_format
from bertkit.core.data.records import blank, text_value
from bertkit.core.errors import BertkitError, RecordError
from bertkit.tasks import record
from bertkit.tasks.inspecting import View

if TYPE_CHECKING:
    from bertkit.config import Config
    from bertkit.core.run_info import RunInfo
    from bertkit.tasks.options import EvaluateOptions, PredictOptions
    from bertkit.tasks.scored import Scored


def pad_multiple(cfg: Config) -> int | None:
    """Batches are padded to a multiple of this (train.pad_to_multiple_of; 8 on a GPU, where
    tensor cores want it; none on a CPU)."""
    import torch

    return cfg.train.pad_to_multiple_of or (8 if torch.cuda.is_available() else None)


def require_field(record: dict, column: str, where: str, option: str = "--text-column", more: str = "") -> None:
    """The record has the field `column`, or a `RecordError` naming it (`option` sets it)."""
    if column not in record:
        fields = ", ".join(map(str, record)) or "none"
        raise RecordError(f"{where}: no '{column}' field (fields: {fields}); set {option}.{more}", column)


class Task:
    name: str  # as in the registry
    auto_model: str = "AutoModel"  # the transformers Auto class that loads a trained bundle
    records_per_pass: int = 1024  # records `predict` takes from the input at a time (memory, not results)
    can_stream: bool = False  # whether `load` honours data.streaming (a lazily read training split)

    # ------------------------------------------------------------ training: required

    def load(self, cfg: Config) -> dict:
        """The splits as `datasets.Dataset`s: {"train": ..., "validation": ..., "test"?: ...}."""
        raise NotImplementedError

    def setup(self, ds: dict, cfg: Config) -> dict:
        """The run's description (`info`, saved as bertkit.json): labels, lengths, settings.
        Must hold "task" and "max_length"."""
        raise NotImplementedError

    def prepare(self, ds: dict, tokenizer, info: dict) -> dict:
        """The splits turned into model features (token ids, labels)."""
        raise NotImplementedError

    def build_model(self, source: str | None, info: dict, cfg: Config):
        """The model to train, from `source` (a path or hub id; None when `starts_from_scratch`)."""
        raise NotImplementedError

    def metric_names(self, info: dict) -> list[str]:
        """The metrics `metric_fn` reports (train.metric_for_best_model is checked against them)."""
        raise NotImplementedError

    def best_metric(self, info: dict) -> str:
        """The metric that picks the best checkpoint when the config does not say."""
        raise NotImplementedError

    def metric_fn(self, info: dict, features, examples) -> Callable[[Any], dict]:
        """The Trainer's compute_metrics for one split (`features` prepared from `examples`)."""
        raise NotImplementedError

    # ------------------------------------------------------------ training: optional hooks

    scores_before_training = False  # score the validation data once before training (see `compare`)
    reduce_logits = None  # the Trainer's preprocess_logits_for_metrics, when logits are too big to keep

    def starts_from_scratch(self, cfg: Config) -> bool:
        """True when the model is built from a config, not loaded (no model.name to resolve)."""
        return False

    def inputs(self, cfg: Config) -> list[str]:
        """Paths a run reads besides model.name, model.tokenizer and the data files (distill: its
        teacher), which an output with --overwrite must never delete."""
        return []

    def new_tokenizer(self, ds: dict, cfg: Config):
        """A tokenizer learnt from the data, or None to load model.tokenizer / model.name's."""
        return None

    def tokenizer_facts(self, tokenizer, info: RunInfo) -> dict:
        """What the run's description gains once the tokenizer is known (a vocabulary size, a
        pad id), merged into `info` once, before `prepare`; may refuse a tokenizer the task cannot
        use. The description is fixed from then on."""
        return {}

    def collator(self, tokenizer, cfg: Config):
        """Batches of `prepare`'s features: padded to the longest row of each batch."""
        from transformers import DataCollatorWithPadding

        return DataCollatorWithPadding(tokenizer, pad_to_multiple_of=pad_multiple(cfg))

    def loss(self, info: dict, cfg: Config, train) -> Callable | None:
        """The Trainer's compute_loss_func, or None for the model's own loss. Called as
        `f(outputs, labels, num_items_in_batch=None)`; the Trainer does not divide its result by
        the gradient accumulation steps, so it must be normalised by `num_items_in_batch` (the
        step's labels that are not -100): see bertkit/core/losses.py, and `losses.step_share` for a
        loss computed as a micro-batch mean."""
        return None

    def trains_itself(self, info: RunInfo) -> bool:
        """Does `fit` train this run without the Trainer (so its learning-rate settings are unused)."""
        return False

    def fit(self, model, tokenizer, features: dict, info: RunInfo, cfg: Config, log_history: list) -> dict | None:
        """Train `model` without the Trainer, or None to let the Trainer train it (every task's
        default; classify's contrastive route trains its own way, `trains_itself`). Returns what
        bertkit.json records of the training; `log_history` takes the losses the training curves plot."""
        return None

    def compare(self, before: dict, after: dict) -> dict:
        """Headline numbers from the scores before and after training (when
        `scores_before_training`); they lead metrics.json and the model card."""
        return {}

    def export(self, model, info: dict):
        """What the bundle saves, when it is not the trained module as it is (an encoder inside a
        wrapper, a model with settings changed back); None saves the trained module."""
        return None

    # ------------------------------------------------------------ inspecting the data (optional)

    def inspect_view(self, split, cfg: Config, info: RunInfo):
        """What `bertkit inspect` looks at in one split (`bertkit.inspection.texts.View`): by
        default the configured text (and pair) column, and the label column's values as labels
        when the split has one."""

        d = cfg.data
        texts = [str(t) if t is not None else "" for t in column(split, d.text_column)]
        pairs = None
        if d.text_pair_column and d.text_pair_column in split.column_names:
            pairs = [str(t) if t is not None else "" for t in column(split, d.text_pair_column)]
        labels = None
        if d.label_column in split.column_names:
            labels = [[str(x) for x in v] if isinstance(v, list) else [str(v)] for v in column(split, d.label_column)]
        places = column(split, WHERE) if WHERE in split.column_names else []
        return View(texts, labels, pairs, places)

    def data_format(self, source) -> str:
        """The format this task reads the file of `source` (a `DataSource`) in, told from its
        extension or its content as `load` and `evaluate` tell it (said once when from content):
        a command that reads one file several times tells it once and passes it on."""

        return detect_format(source.path, source.format)

    def gold_fields(self, info: RunInfo) -> list[str]:
        """The fields in which a labelled input record holds its answer (classify's label column,
        NER's tags or entities): `predict` keeps them in its results under their own names, and
        a prediction field of the same name is written as `predicted_<name>`."""
        return []

    def data_warnings(self, info: RunInfo) -> list[str]:
        """What reading the data found and changed that the user should know (NER's repaired
        tags), from the run's description: training prints them, `inspect` reports them."""
        return []

    def inspect_checks(self, ds: dict, tokenizer, info: RunInfo, cfg: Config) -> tuple[dict, list[str]]:
        """Numbers only this task has (NER's tag scheme, QA's windows), and warnings about them."""
        return {}, []

    # ------------------------------------------------------------ using a bundle: required

    def evaluate(self, model, tokenizer, info: RunInfo, data: str, options: EvaluateOptions) -> dict:
        """Scores of the model on a labelled file (`bertkit evaluate`)."""
        raise NotImplementedError

    def evaluate_examples(self, model, tokenizer, info: RunInfo, data: str, options: EvaluateOptions) -> Scored:
        """The model's result on each example of a labelled file, as a `bertkit.tasks.scored.Scored`
        that scores any subset of them (`bertkit compare`: bootstrap intervals, paired tests). A
        task that has it makes `evaluate` its `.score()`, so the two cannot disagree."""
        raise BertkitError(f"bertkit compare cannot score {self.name} models: the task gives no per-example results")

    def predict(
        self, model, tokenizer, info: RunInfo, records: Iterable[dict], options: PredictOptions
    ) -> Iterator[dict]:
        """One result per record, in order (records for which `is_empty` is true never reach it)."""
        raise NotImplementedError

    def empty_result(self, model, record: dict, info: RunInfo, options: PredictOptions) -> dict:
        """The result of an empty input: the usual shape, prediction fields null, "empty": true."""
        raise NotImplementedError

    # ------------------------------------------------------------ using a bundle: optional hooks

    def check_info(self, root: Path, file: Path, info: dict, complete: bool) -> None:
        """Refuse a bundle's description (`file`, the bertkit.json of the model folder `root`) that
        this task cannot run, with a `BertkitError` naming the file and the key; `complete` is false
        when the command supplies some settings itself or only shows the bundle. Called by every
        command that opens a bundle (`tasks.bundle.read_info`), after the checks every task shares."""
        return None

    def is_empty(self, record: dict, info: RunInfo, options: PredictOptions) -> bool:
        """Whether a record has nothing to predict on (its text is blank)."""
        column = options.text_column or "text"
        return column in record and blank(record[column])

    def check_record(
        self, record: dict, tokenizer, info: RunInfo, options: PredictOptions, where: str, seen: dict
    ) -> None:
        """Refuse a record that `predict` cannot read (a `RecordError` naming `where` and the
        field), before any model runs: `bertkit predict` checks each record of its input with it,
        and `bertkit serve` each record of a request, so the two accept and refuse the same
        records. Records for which `is_empty` is true are not checked. `seen` is shared by the
        records of one input (one request), for checks across records (QA's unique ids).
        The default: the text field is there and holds text (null or a number is read as text)."""
        column = options.text_field(info)
        require_field(record, column, where)
        text_value(record[column], where, column)

    # ------------------------------------------------------------ export and explain (optional)

    onnx_outputs: tuple[str, ...] = ("logits",)  # the ONNX graph's outputs (`bertkit export`), as predict reads them
    onnx_per_token = False  # whether they have a sequence axis (a row per token) besides the batch one

    def onnx_forward(self, model, inputs: dict, info: dict):
        """The graph's outputs, in `onnx_outputs`' order, from the bundle's model on `inputs` (the
        graph's input tensors by name); traced by the exporter, so torch operations only."""
        return model(**inputs).logits

    def explainer(self):
        """What `bertkit explain` does with this task's models (a `bertkit.tasks.explaining.Explainer`:
        how a text is read, which scores are explained, how the result is laid out), or None when
        the task has nothing to explain (`explain_refusal` says why)."""
        return None

    explain_refusal = ""  # e.g. "an embed model gives a vector, not a label to explain"

    # ------------------------------------------------------------ the model card

    def card_summary(self, info: dict) -> str:
        """A few words on what kind of model this is."""
        return info.get("problem_type") or self.name

    def cli_usage(self, where: str) -> str:
        return f"bertkit predict --model {where} --input texts.txt --output predictions.jsonl"

    def python_usage(self, where: str, info: dict | None = None) -> list[str]:

        pipeline = record(self.name).pipeline
        return ["from transformers import pipeline", f'model = pipeline("{pipeline}", model="{where}")']

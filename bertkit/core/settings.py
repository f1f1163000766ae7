"""The sections every config has besides the data (bertkit/core/data_settings.py): the model and
training, the base class of every section (`Section`, each task's own included), and the helpers
the sections share. Every key has a default and a line of help (its `description`, which
`bertkit config init` turns into comments)."""

from __future__ import annotations

import typing
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from bertkit.core.losses import CROSS_ENTROPY, DEFAULT_GAMMA
from bertkit.core.seeds import MAX_SEED

BASE_SECTIONS = ("model", "data", "train")  # every run has these; each task adds its own (its registry record)

# the loss settings the classify and ner sections share
Weights = Literal["balanced"] | list[float] | dict[str, float] | None
LossName = Literal["cross_entropy", "focal"]
# cross_entropy stays the default: balanced data gains nothing from the others, and on skewed data
# bench/imbalance_quality.py (docs/benchmarks.md, one seed, small budgets) showed focal alone no
# better than weights; DEFAULT_GAMMA (2.0) is the focal-loss paper's, see bertkit/core/losses.py
LOSS_HELP = "cross_entropy, or focal: down-weighs the examples the model already gets right (with focal_gamma)"
GAMMA_HELP = "loss: focal: the focusing exponent (0 = cross-entropy); 2 as in the focal-loss paper"


def loss_field():
    return Field(CROSS_ENTROPY, description=LOSS_HELP)


def gamma_field():
    return Field(DEFAULT_GAMMA, ge=0, description=GAMMA_HELP)


def derived_doc_stride(max_length: int) -> int:
    """QA windows share a third of their length when qa.doc_stride is left out (128 at 384): a
    fixed 128 would leave no room for the context at max_length 192."""
    return max(max_length // 3, 1)


# The largest whole number a setting without a limit of its own may hold (a count of steps,
# examples, tokens, layers): the libraries bertkit hands them to count in 32-bit integers (torch's
# index tensors, a DataLoader's batch), and a count past it ended in their traceback, not a message.
INT_LIMIT = 2**31 - 1


def _kinds(annotation) -> set:
    """The plain types a field's annotation admits (`int | None` -> {int, NoneType})."""
    args = typing.get_args(annotation)
    if not args:
        return {annotation} if isinstance(annotation, type) else {type(annotation)}
    if typing.get_origin(annotation) is typing.Literal:
        return {type(a) for a in args}
    return set().union(*(_kinds(a) for a in args))


class Section(BaseModel):
    # allow_inf_nan: a setting of NaN or infinity (`max_grad_norm: .inf`) would reach bertkit.json,
    # which JSON cannot hold, or silently make a number NaN
    model_config = ConfigDict(extra="forbid", validate_assignment=True, allow_inf_nan=False)

    @field_validator("*", mode="before")
    @classmethod
    def _a_number_is_a_number(cls, value: Any, info):
        """YAML reads `on`, `true`, `no` as booleans, and pydantic would take one for 1 or 0 in a
        number's place (`max_steps: on` ran one step): a boolean where a number goes is refused,
        in a file and in `--set` alike."""
        field = cls.model_fields[info.field_name]
        kinds = _kinds(field.annotation)
        if isinstance(value, bool) and kinds & {int, float} and bool not in kinds:
            raise ValueError("a number, not true or false (YAML reads on, off, yes and no as those too); give a number")
        # a whole number past a count's reach (given as 1.0e+29 too), unless the field sets its own limit
        bounded = any(getattr(m, "le", None) is not None or getattr(m, "lt", None) is not None for m in field.metadata)
        count = int in kinds and float not in kinds and not bounded
        if count and isinstance(value, int | float) and not isinstance(value, bool) and value > INT_LIMIT:
            raise ValueError(f"at most {INT_LIMIT:,}, the largest count bertkit can use here")
        return value


def home_path(value: str | None) -> str | None:
    """`~/data/train.csv` as the shell would expand it (YAML does not)."""
    import os

    return os.path.expanduser(value) if value and value.startswith("~") else value


def named_columns(value: list[str] | None) -> list[str] | None:
    if value is not None:
        if not value or any(not str(name).strip() for name in value):
            raise ValueError("name every column, in the file's order, e.g. [label, title, description]")
        seen: set = set()
        twice = [x for x in value if x in seen or seen.add(x)]
        if twice:
            raise ValueError(f"'{twice[0]}' is named twice; give every column its own name")
    return value


def known_encoding(value: str | None) -> str | None:
    import codecs

    if value is not None:
        try:
            codecs.lookup(value)
        except LookupError:
            raise ValueError(f"unknown text encoding '{value}'; e.g. utf-8, latin-1, cp1252, shift_jis") from None
        encoder = codecs.getincrementalencoder(value)()
        encoder.encode("\n")  # a byte-order mark, if the codec writes one (utf-8-sig), comes first
        if encoder.encode("\n") != b"\n":
            raise ValueError(f"'{value}' does not write a line break as one byte; convert the file to UTF-8")
    return value


class ModelConfig(Section):
    name: str | None = Field(
        "bert-base-uncased",
        description="hub id, local model directory, or a bertkit bundle to start from (distill: the teacher when null)",
    )
    tokenizer: str | None = Field(None, description="tokenizer to use when not the model's own")

    @field_validator("name", "tokenizer")
    @classmethod
    def _home(cls, value: str | None) -> str | None:
        return home_path(value)

    max_length: int = Field(256, ge=8, le=8192, description="longest input in tokens")
    revision: str | None = Field(None, description="hub revision of the model")
    trust_remote_code: bool = Field(False, description="run code shipped with a hub model (only for models you trust)")
    random_init: bool = Field(
        False,
        description="keep the architecture and tokenizer, start from random weights (what pre-training buys)",
    )


PositiveRate = Annotated[float, Field(gt=0)]


class AdapterConfig(Section):
    """`train.adapter`: train a small LoRA adapter (and the task head) on a frozen base (docs/adapters.md)."""

    kind: Literal["lora"] = Field("lora", description="the adapter: lora (low-rank updates of chosen layers)")
    r: int = Field(8, ge=1, description="rank of each low-rank update")
    alpha: float = Field(16, gt=0, description="scale of the updates (alpha / r multiplies them)")
    dropout: float = Field(0.1, ge=0, lt=1, description="dropout on the adapter's input")
    target_modules: Literal["auto"] | list[str] = Field(
        "auto", description="layers to adapt (names or name endings); auto: the family's attention and feed-forward"
    )

    @field_validator("target_modules")
    @classmethod
    def _some_layers(cls, value: Any) -> Any:
        if isinstance(value, list) and not [name for name in value if name.strip()]:
            raise ValueError("an empty list adapts no layer: name the layers (or name endings), or give auto")
        return value


class TrainConfig(Section):
    epochs: float = Field(3, gt=0, description="passes over the training data")
    max_steps: int | None = Field(None, ge=1, description="stop after this many steps")
    batch_size: int = Field(16, ge=1, description="examples per device per step")
    eval_batch_size: int | None = Field(None, ge=1, description="defaults to 2 x batch_size")
    gradient_accumulation_steps: int = Field(1, ge=1, description="steps per optimiser update")
    learning_rate: PositiveRate | Literal["auto"] = Field(
        2.0e-5, description="peak learning rate; auto: the task's measured rate, raised for short runs"
    )
    head_learning_rate: PositiveRate | Literal["auto"] | None = Field(
        None, description="peak learning rate of the task head (new weights); learning_rate when null"
    )
    weight_decay: float = Field(0.01, ge=0, description="AdamW weight decay")
    warmup_ratio: float = Field(0.06, ge=0, lt=1, description="share of steps spent warming up")
    lr_scheduler: str = Field("linear", description="linear, cosine, constant_with_warmup, ...")
    max_grad_norm: float = Field(1.0, gt=0, description="gradient clipping norm")
    seed: int = Field(
        42, ge=0, le=MAX_SEED, description="random seed for weights, shuffling and splits (0 to 2**32 - 1)"
    )
    eval_strategy: Literal["epoch", "steps", "no"] = Field(
        "epoch", description="when to evaluate: every epoch, every eval_steps, or never"
    )
    eval_steps: int = Field(500, ge=1, description="steps between evaluations (eval_strategy: steps)")

    @field_validator("eval_strategy", mode="before")
    @classmethod
    def _yaml_no(cls, value: Any) -> Any:
        # YAML 1.1 reads an unquoted `no` as false
        return "no" if value is False else value

    logging_steps: int = Field(20, ge=1, description="steps between training-loss log lines")
    metric_for_best_model: str | None = Field(
        None, description="metric that picks the best checkpoint; task default when null"
    )
    early_stopping_patience: int | None = Field(
        None, ge=1, description="stop after this many evaluations without improvement"
    )
    save_total_limit: int = Field(2, ge=1, description="checkpoints kept while training")
    precision: Literal["auto", "fp32", "bf16", "fp16"] = Field(
        "auto", description="auto: bf16 on GPUs that support it, else fp16 on GPU, fp32 on CPU"
    )
    group_by_length: bool = Field(
        False, description="batch texts of similar length together (faster, may cost accuracy)"
    )
    pad_to_multiple_of: int | None = Field(
        None, ge=1, description="pad batches to a multiple of this; 8 on GPU when null"
    )
    freeze_embeddings: bool = Field(False, description="keep the embedding layer fixed")
    freeze_layers: int = Field(0, ge=0, description="keep the lowest N encoder layers fixed")
    gradient_checkpointing: bool = Field(False, description="save memory at the cost of speed")
    adapter: AdapterConfig | None = Field(
        None, description="train a LoRA adapter instead of the whole model: {kind: lora, r: 8, ...} (null: off)"
    )
    dataloader_workers: int = Field(0, ge=0, description="worker processes feeding batches")
    compile: bool = Field(
        False,
        description="torch.compile the model: faster steps after a compile of a minute or more, for long GPU runs",
    )
    report_to: list[str] = Field(default_factory=list, description="trackers to log to: tensorboard, wandb, ... (none)")

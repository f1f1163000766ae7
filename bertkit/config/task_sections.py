"""One config section per task (`classify:`, `ner:`, `qa:`, `mlm:`, `embed:`); the task registry
names each one, so `Config` has a section for every registered task."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Literal

from pydantic import Field, PrivateAttr, field_validator, model_validator

from bertkit.config.sections import Section, derived_doc_stride, home_path
from bertkit.losses import CROSS_ENTROPY, DEFAULT_GAMMA

if TYPE_CHECKING:
    from bertkit.config.schema import RunConfig

Weights = Literal["balanced"] | list[float] | dict[str, float] | None
LossName = Literal["cross_entropy", "focal"]
# cross_entropy stays the default: balanced data gains nothing from the others, and on skewed data
# bench/imbalance_quality.py (docs/benchmarks.md, one seed, small budgets) showed focal alone no
# better than weights; DEFAULT_GAMMA (2.0) is the focal-loss paper's, see bertkit/losses.py
LOSS_HELP = "cross_entropy, or focal: down-weighs the examples the model already gets right (with focal_gamma)"
GAMMA_HELP = "loss: focal: the focusing exponent (0 = cross-entropy); 2 as in the focal-loss paper"
# classify.strategy auto: the contrastive route up to this many examples per label, plain fine-tuning
# above. The default is auto: the contrastive route (mean-pooled, bertkit/pooled_head.py) beat plain
# fine-tuning at 8, 16 and 64 examples a class on SST-2 (MiniLM, 3 seeds) and at 8 on IMDb and
# livedoor (bench/fewshot_quality.py, docs/benchmarks.md "Few-shot classification"); 64 is the
# largest size measured, where it still led by 4 to 5 points
FEW_SHOT_EXAMPLES = 64
DEFAULT_STRATEGY = "auto"


def loss_field():
    return Field(CROSS_ENTROPY, description=LOSS_HELP)


def gamma_field():
    return Field(DEFAULT_GAMMA, ge=0, description=GAMMA_HELP)


class ClassifyConfig(Section):
    problem_type: Literal["auto", "single_label", "multi_label", "regression"] = Field(
        "auto",
        description="auto: regression for float labels, multi_label for list labels, else single",
    )
    truncation: Literal["head", "tail", "head+tail"] = Field(
        "head", description="which part of a long text to keep: start, end, or both"
    )
    head_tokens: int | None = Field(
        None, ge=1, description="head+tail: tokens kept from the start; a quarter when null"
    )
    class_weights: Weights = Field(
        None,
        description="weigh the loss per label (imbalanced data): 'balanced', a list in the order of the labels "
        "bertkit.json records, {label: weight}, or null. single_label: per class, balanced = inverse frequency; "
        "multi_label: each label's positive weight, balanced = negatives / positives",
    )
    loss: LossName = loss_field()
    focal_gamma: float = gamma_field()
    threshold: float = Field(0.5, gt=0, lt=1, description="multi_label: score above which a label is on")
    strategy: Literal["auto", "finetune", "contrastive"] = Field(
        DEFAULT_STRATEGY,
        description="auto (the default): contrastive when the training data has few_shot_examples or fewer "
        "examples per label (single texts only), else finetune; finetune: train the whole model on the labels; "
        "contrastive (few-shot, SetFit's method): tune the encoder on pairs made from the labels, then fit the "
        "head on its mean-pooled vectors",
    )
    few_shot_examples: int = Field(
        FEW_SHOT_EXAMPLES, ge=0, description="strategy auto: most examples per label for the contrastive route"
    )
    pair_rounds: int = Field(
        20, ge=1, description="strategy contrastive: rounds of pairs; a round pairs each example with one of each kind"
    )
    contrastive_learning_rate: float = Field(
        2.0e-5, gt=0, description="strategy contrastive: learning rate of the encoder's tuning on pairs (one pass)"
    )


class NerConfig(Section):
    scheme: Literal["auto", "IOB1", "IOB2", "BIOES", "BILOU"] = Field(
        "auto", description="tagging scheme of the data (IOB1 is CoNLL-2003's); detected when auto"
    )
    token_column: int = Field(0, description="CoNLL files: column of the token (0 = first)")
    tag_column: int = Field(-1, description="CoNLL files: column of the tag (-1 = last)")
    tokens_field: str = Field("tokens", description="JSON data: field with the list of tokens")
    tags_field: str = Field("tags", description="JSON data: field with the list of tags (or tag ids)")
    entities_field: str = Field("entities", description="span data: field with the entities of data.text_column")
    start_field: str = Field("start", description="span data: entity start (character offset)")
    end_field: str = Field("end", description="span data: entity end (character offset, exclusive)")
    type_field: str = Field("type", description="span data: entity type")
    span_field: str | None = Field(
        None, description="span data: field with [start, end] in one list (Stockmark's 'span'), instead of the two"
    )
    label_all_subwords: bool = Field(
        False, description="label every sub-word of a word (B- becomes I-), not only the first"
    )
    stride: int = Field(32, ge=0, description="sub-word tokens shared by consecutive windows of a long sentence")
    class_weights: Weights = Field(
        None,
        description="weigh the loss per tag (imbalanced data): 'balanced' (inverse frequency of each tag in "
        "the training sub-words), a list in the order of the tags bertkit.json records (O, B-X, I-X, ... by "
        "type), {tag or type: weight} (others weigh 1), or null",
    )
    loss: LossName = loss_field()
    focal_gamma: float = gamma_field()


class QaConfig(Section):
    question_field: str = Field("question", description="flat JSON data: field with the question")
    context_field: str = Field("context", description="flat JSON data: field with the context passage")
    id_field: str = Field("id", description="flat JSON data: field with the question id")
    answers_field: str = Field(
        "answers", description="flat JSON data: {text: [...], answer_start: [...]} or a list of {text, answer_start}"
    )
    version_2: bool | None = Field(
        None, description="questions may have no answer (SQuAD v2); detected from the training data when null"
    )
    doc_stride: int | None = Field(
        None, ge=0, description="tokens shared by consecutive windows of a long context; max_length / 3 when null"
    )
    max_question_length: int = Field(64, ge=1, description="questions are cut to this many tokens")
    n_best: int = Field(20, ge=1, description="start and end candidates considered per window")
    max_answer_length: int = Field(30, ge=1, description="longest answer in tokens")
    null_score_diff_threshold: float = Field(
        0.0, description="v2: answer nothing when the null score beats the best answer by more than this"
    )
    f1_unit: Literal["auto", "word", "char"] = Field(
        "auto",
        description="F1 over words (SQuAD) or characters (JSQuAD); auto: characters when the contexts are "
        "mostly Chinese / Japanese characters",
    )

    def derive(self, run: RunConfig) -> None:
        """Settings that follow others when left out (called once the whole config is read)."""
        if self.doc_stride is None:
            self.doc_stride = derived_doc_stride(run.model.max_length)


class MlmConfig(Section):
    mode: Literal["blocks", "lines"] = Field(
        "blocks", description="blocks: join all text and cut it into blocks of block_size; lines: one example a line"
    )
    block_size: int | None = Field(None, ge=8, description="tokens per block (blocks mode); model.max_length when null")
    long_lines: Literal["truncate", "windows"] = Field(
        "truncate", description="lines mode: cut a line longer than model.max_length, or split it into windows"
    )
    mlm_probability: float = Field(0.15, gt=0, lt=1, description="share of tokens (or words) chosen for prediction")
    whole_word_masking: bool = Field(False, description="choose whole words: all of a word's pieces or none")
    from_scratch: bool = Field(
        False, description="pre-train a new BERT of the size below (model.name is then not used)"
    )
    vocab_size: int = Field(8000, ge=16, description="from scratch: WordPiece vocabulary learnt from the training text")
    lowercase: bool = Field(True, description="from scratch: the new vocabulary lowercases text")
    japanese: bool = Field(
        False,
        description="from scratch: cut text into MeCab words first (a BertJapaneseTokenizer, as the Tohoku models)",
    )
    hidden_size: int = Field(256, ge=8, description="from scratch: width of the model")
    num_layers: int = Field(4, ge=1, description="from scratch: encoder layers")
    num_heads: int = Field(4, ge=1, description="from scratch: attention heads (must divide hidden_size)")
    intermediate_size: int = Field(1024, ge=8, description="from scratch: feed-forward width")
    initializer_range: float = Field(
        0.02,
        gt=0,
        le=1,
        description="from scratch: standard deviation of the initial weights (BERT's 0.02 was chosen for 768 "
        "wide; narrow models can need larger ones to start reading word order)",
    )
    dropout: float = Field(
        0.1,
        ge=0,
        lt=1,
        description="from scratch: dropout while pre-training (0 speeds up learning on small budgets); "
        "the saved model has BERT's 0.1 for fine-tuning",
    )
    top_k: int = Field(5, ge=1, description="fill-mask predictions: candidates listed per [MASK]")
    nsp: bool = Field(
        False,
        description="also train next-sentence prediction on sentence pairs from documents (one sentence a line, "
        "a blank line between documents); off as RoBERTa found it unnecessary",
    )

    @model_validator(mode="after")
    def _heads_divide(self) -> MlmConfig:
        if self.hidden_size % self.num_heads:
            raise ValueError(f"num_heads ({self.num_heads}) must divide hidden_size ({self.hidden_size})")
        return self


class EmbedConfig(Section):
    pooling: Literal["mean", "cls", "max", "pooler"] = Field(
        "mean", description="how token vectors become one sentence vector"
    )
    normalize: bool = Field(True, description="L2-normalise the sentence vectors the bundle produces")
    loss: Literal["auto", "in_batch", "cosine", "cosent"] = Field(
        "auto",
        description="auto: in_batch for (anchor, positive) pairs, cosent for scored pairs; cosine: MSE on cosine",
    )
    scale: float = Field(20.0, gt=0, description="in_batch and cosent: similarity scale (inverse temperature)")
    score_max: float | None = Field(
        None,
        gt=0,
        description="scored pairs: the top of the score range (e.g. 5 for STS); the data's maximum when null",
    )
    pair_max_length: int | None = Field(
        None, ge=8, description="longest second text (e.g. a passage) in tokens; model.max_length when null"
    )


class DistillConfig(Section):
    teacher: str | None = Field(
        None, description="the teacher: a bertkit classify or ner bundle (required with task: distill)"
    )
    student_layers: list[int] | None = Field(
        None,
        description="encoder layers of model.name kept in the student, e.g. [0, 2, 4] (DistilBERT's every other "
        "layer); null keeps all",
    )
    # 2.0: a soft but not flat target (DistilBERT trained at 2.0); the SST-2 bench (docs/distill.md) compares values
    temperature: float = Field(2.0, gt=0, description="softmax temperature of the soft targets (teacher and student)")
    # 0.5: equal weight to the labels and the teacher; docs/distill.md reports the SST-2 bench's choices
    alpha: float = Field(
        0.5,
        ge=0,
        le=1,
        description="weight of the hard-label loss: loss = (1 - alpha) * T^2 * KL(teacher_T || student_T) + "
        "alpha * hard loss",
    )
    teacher_batch_size: int = Field(64, ge=1, description="examples per batch when the teacher scores the data")
    _teacher_task: str | None = PrivateAttr(None)  # whose learning-rate rule `auto` follows

    @property
    def rate_task(self) -> str | None:
        return self._teacher_task

    @field_validator("student_layers")
    @classmethod
    def _sorted_layers(cls, value: list[int] | None) -> list[int] | None:
        if value is not None:
            if not value:
                raise ValueError("an empty list; name the layers to keep, e.g. [0, 2, 4], or null for all")
            if any(i < 0 for i in value) or any(b <= a for a, b in zip(value, value[1:], strict=False)):
                raise ValueError("layer indices must be 0 or more, in increasing order, each once, e.g. [0, 2, 4]")
        return value

    def derive(self, run: RunConfig) -> None:
        """distill: a teacher is required and the student starts from it unless model.name says
        otherwise; other tasks read no data.unlabeled."""
        if run.task != "distill":
            if run.data.unlabeled:
                raise ValueError("data.unlabeled: only task: distill reads unlabelled text; remove it")
            return
        if not self.teacher:
            raise ValueError("distill.teacher: required; give the folder of a bertkit classify or ner bundle")
        self.teacher = home_path(self.teacher)
        if not Path(self.teacher).is_dir():  # before model.name falls back to it and is looked up on the Hub
            raise ValueError(
                f"distill.teacher: {self.teacher}: no such folder; give the folder of a bertkit classify or ner bundle"
            )
        if run.model.name is None:
            run.model.name = self.teacher
        facts = _teacher_facts(self.teacher)
        self._teacher_task = facts.get("task")
        length = facts.get("max_length")
        if "max_length" not in run.model.model_fields_set and isinstance(length, int) and length >= 8:
            run.model.max_length = length  # the teacher's, when left out
        from bertkit.tasks import registry

        if facts.get("task") in registry.names():  # the teacher task's measured defaults (learning rate)
            for (section, key), value in registry.record(facts["task"]).defaults.items():
                part = getattr(run, section, None)
                if isinstance(part, Section) and key not in part.model_fields_set:
                    setattr(part, key, value)


def _teacher_facts(folder: str) -> dict:
    """A teacher bundle's bertkit.json, or {} when it has none (the task then says what is
    wrong with the teacher)."""
    import json
    from pathlib import Path

    try:
        facts = json.loads((Path(folder) / "bertkit.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return facts if isinstance(facts, dict) else {}

"""The `classify:` section: the settings of text classification (bertkit/tasks/classify)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from bertkit.core.settings import LossName, Section, Weights, gamma_field, loss_field

# classify.strategy auto: the contrastive route up to this many examples per label, plain fine-tuning
# above. The default is auto: the contrastive route (mean-pooled, bertkit/core/pooled_head.py) beat plain
# fine-tuning at 8, 16 and 64 examples a class on SST-2 (MiniLM, 3 seeds) and at 8 on IMDb and
# livedoor (bench/fewshot_quality.py, docs/benchmarks.md "Few-shot classification"); 64 is the
# largest size measured, where it still led by 4 to 5 points
FEW_SHOT_EXAMPLES = 64
DEFAULT_STRATEGY = "auto"


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
    calibration: Literal["temperature", "none"] = Field(
        "temperature",
        description="temperature: fit a temperature on the validation split after training, so scores are "
        "probabilities (kept in bertkit.json, applied by predict, evaluate, serve and exports); none: raw softmax",
    )
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


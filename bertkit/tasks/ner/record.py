"""ner's registry record: its `task:` name and `bertkit train` sub-command, its config section,
its measured defaults (each with the benchmark it comes from), its pipeline tag and starter values."""

from __future__ import annotations

from bertkit.core.learning_rates import ADAPTER_RATES, AUTO, StepScaledRate
from bertkit.tasks.registry import TaskRecord

# NER: 5e-5 at full CoNLL-2003's 2,634 steps, 3e-4 the best rate measured at 63 steps (entity F1
# 0.61 against 0.52 at 2e-4 and 0.22 at 5e-5, two seeds): the same √ rule through both points
NER_SHORT_RUNS_RAISED = StepScaledRate(base=5.0e-5, reference_steps=2500, max_factor=6.0)

RECORD = TaskRecord(
    name="ner",
    module="bertkit.tasks.ner.task",
    summary="Named-entity recognition: CoNLL columns, token/tag JSON lines or character-span data.",
    section="ner",
    settings="bertkit.tasks.ner.settings:NerConfig",
    architecture="ForTokenClassification",
    pipeline="token-classification",
    # CoNLL-2003 (bench/ner_quality.py): 5e-5 beats run_ner.py's F1 on the full set (2,634 steps);
    # short runs want more, and more than classify's (bench/defaults_study.py: 3e-4 best at 63 steps)
    defaults={("train", "learning_rate"): AUTO},
    learning_rate=NER_SHORT_RUNS_RAISED,
    # LoRA r=8 on CoNLL-2003 (bench/adapter_quality.py)
    adapter_learning_rate=ADAPTER_RATES,
    starter={("data", "train"): "data/train.conll", ("data", "validation"): "data/dev.conll"},
)

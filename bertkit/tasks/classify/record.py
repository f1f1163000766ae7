"""classify's registry record: its `task:` name and `bertkit train` sub-command, its config section,
its measured defaults (each with the benchmark it comes from), its pipeline tag and starter values."""

from __future__ import annotations

from bertkit.core.learning_rates import ADAPTER_RATES, AUTO, StepScaledRate
from bertkit.tasks.registry import TaskRecord

# classify: 5e-5 for runs of 1,000 steps or more (full SST-2, IMDb), raised by √(1000 / steps)
# below that, at most 8× (4e-4, runs under 16 steps). On SST-2 samples no default was found on the
# √ law held from 250 steps down: 2e-4 was the best of run_glue's rates at 63 steps, and at 19
# steps 2e-4 (the old 4× cap) left MiniLM on the majority class where the law's 3.6e-4 learnt
# (docs/benchmarks.md, "Defaults on data they were not found on")
SHORT_RUNS_RAISED = StepScaledRate(base=5.0e-5, reference_steps=1000, max_factor=8.0)

RECORD = TaskRecord(
    name="classify",
    module="bertkit.tasks.classify.task",
    summary="Text classification: single texts or pairs; multi-class, multi-label or regression.",
    section="classify",
    settings="bertkit.tasks.classify.settings:ClassifyConfig",
    architecture="ForSequenceClassification",
    pipeline="text-classification",
    # IMDb and SST-2 (bench/classify_quality.py): 5e-5 reaches the targets on runs of thousands of
    # steps; on short runs it is too low (bench/defaults_study.py): auto raises it, to 2e-4 at 63 steps
    defaults={("train", "learning_rate"): AUTO},
    learning_rate=SHORT_RUNS_RAISED,
    # LoRA r=8 on SST-2 (bench/adapter_quality.py, docs/benchmarks.md "LoRA adapters")
    adapter_learning_rate=ADAPTER_RATES,
    starter={("data", "train"): "examples/reviews/train.csv", ("data", "test"): "examples/reviews/test.csv"},
)

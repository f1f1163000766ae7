"""qa's registry record: its `task:` name and `bertkit train` sub-command, its config section,
its measured defaults (each with the benchmark it comes from), its pipeline tag and starter values."""

from __future__ import annotations

from bertkit.core.learning_rates import ADAPTER_RATES
from bertkit.tasks.registry import TaskRecord

RECORD = TaskRecord(
    name="qa",
    module="bertkit.tasks.qa.task",
    summary="Extractive question answering: SQuAD v1.1 / v2.0 JSON, flat JSON lines or hub squad data.",
    section="qa",
    settings="bertkit.tasks.qa.settings:QaConfig",
    architecture="ForQuestionAnswering",
    pipeline="question-answering",
    # SQuAD (bench/qa_quality.py): 3e-4 with the fresh head at 3e-3 and 10% warmup, F1 33.0
    # where run_qa.py's 5e-5 gives 12.2 on the same budget
    defaults={
        ("model", "max_length"): 384,
        ("train", "learning_rate"): 3.0e-4,
        ("train", "head_learning_rate"): 3.0e-3,
        ("train", "warmup_ratio"): 0.1,
        ("train", "group_by_length"): True,
    },
    # not measured for QA: the rate measured on classify and NER (bench/adapter_quality.py)
    adapter_learning_rate=ADAPTER_RATES,
    starter={("data", "train"): "data/train-v1.1.json", ("data", "validation"): "data/dev-v1.1.json"},
)

"""mlm-adapt's registry record: its `task:` name and `bertkit train` sub-command, its config section,
its measured defaults (each with the benchmark it comes from), its pipeline tag and starter values."""

from __future__ import annotations

from bertkit.tasks.registry import TaskRecord

RECORD = TaskRecord(
    name="mlm-adapt",
    module="bertkit.tasks.mlm.task",
    summary="Masked-LM training on your text: adapt a model to a domain, or pre-train a small BERT from scratch.",
    section="mlm",
    settings="bertkit.tasks.mlm.settings:MlmConfig",
    architecture="ForMaskedLM",
    pipeline="fill-mask",
    # scicite adaptation (bench/adapt_quality.py mlm): blocks of 128, 1e-4, a new head at 1e-3
    defaults={
        ("model", "max_length"): 128,
        ("train", "learning_rate"): 1.0e-4,
        ("train", "head_learning_rate"): 1.0e-3,
    },
    starter={("data", "train"): "data/domain.txt"},
)

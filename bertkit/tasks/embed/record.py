"""embed's registry record: its `task:` name and `bertkit train` sub-command, its config section,
its measured defaults (each with the benchmark it comes from), its pipeline tag and starter values."""

from __future__ import annotations

from bertkit.core.learning_rates import ADAPTER_RATES
from bertkit.tasks.registry import TaskRecord

RECORD = TaskRecord(
    name="embed",
    module="bertkit.tasks.embed.task",
    summary="Sentence embeddings: contrastive fine-tuning on (anchor, positive) pairs or scored pairs.",
    section="embed",
    settings="bertkit.tasks.embed.settings:EmbedConfig",
    pipeline="sentence-similarity",
    # SQuAD retrieval (bench/adapt_quality.py embed): 3e-5, batch 32 (more in-batch negatives), 10% warmup
    defaults={("train", "learning_rate"): 3.0e-5, ("train", "batch_size"): 32, ("train", "warmup_ratio"): 0.1},
    # not measured for embed: the rate measured on classify and NER (bench/adapter_quality.py)
    adapter_learning_rate=ADAPTER_RATES,
    starter={
        ("data", "train"): "data/pairs.jsonl",
        ("data", "text_pair_column"): "positive",
        ("model", "max_length"): 128,
    },
)

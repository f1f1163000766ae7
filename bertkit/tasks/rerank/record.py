"""rerank's registry record: its `task:` name and `bertkit train` sub-command, its config section,
its measured defaults (each with the benchmark it comes from), its pipeline tag and starter values."""

from __future__ import annotations

from bertkit.tasks.registry import TaskRecord

RECORD = TaskRecord(
    name="rerank",
    module="bertkit.tasks.rerank.task",
    summary="Cross-encoder reranker: (query, positive, negatives) groups or labelled (query, passage) pairs; "
    "re-orders `bertkit search` hits (--rerank).",
    section="rerank",
    settings="bertkit.tasks.rerank.settings:RerankConfig",
    pipeline="text-ranking",
    # SQuAD question -> paragraph (bench/rerank_quality.py, docs/rerank.md): 256 tokens hold the
    # question and nearly every paragraph whole; 1e-4 with the new head at 1e-3 and 10% warmup is
    # the bench's run (one setting: a small budget wants a high rate, as qa's 3e-4 showed)
    defaults={
        ("model", "max_length"): 256,
        ("train", "learning_rate"): 1.0e-4,
        ("train", "head_learning_rate"): 1.0e-3,
        ("train", "warmup_ratio"): 0.1,
    },
    starter={
        ("data", "train"): "data/triplets.jsonl",
        ("data", "text_column"): "query",
        ("data", "text_pair_column"): "positive",
    },
)

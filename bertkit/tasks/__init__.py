"""The tasks bertkit trains and runs: one registry record each (bertkit/tasks/registry.py says
what a record holds; bertkit/tasks/base.py is the contract a task's code fulfils).

The measured defaults come from the benchmarks in docs/benchmarks.md (MiniLM on this project's
data): a key a config leaves out takes the task's value here, else its field's generic default.
"""

from __future__ import annotations

from bertkit.core.learning_rates import AUTO, StepScaledRate
from bertkit.tasks.registry import TaskRecord, get_task, record, register, task_for_architecture

__all__ = ["TaskRecord", "get_task", "record", "register", "task_for_architecture"]

# classify: 5e-5 for runs of 1,000 steps or more (full SST-2, IMDb), raised by √(1000 / steps)
# below that, at most 8× (4e-4, runs under 16 steps). On SST-2 samples no default was found on the
# √ law held from 250 steps down: 2e-4 was the best of run_glue's rates at 63 steps, and at 19
# steps 2e-4 (the old 4× cap) left MiniLM on the majority class where the law's 3.6e-4 learnt
# (docs/benchmarks.md, "Defaults on data they were not found on")
SHORT_RUNS_RAISED = StepScaledRate(base=5.0e-5, reference_steps=1000, max_factor=8.0)
# NER: 5e-5 at full CoNLL-2003's 2,634 steps, 3e-4 the best rate measured at 63 steps (entity F1
# 0.61 against 0.52 at 2e-4 and 0.22 at 5e-5, two seeds): the same √ rule through both points
NER_SHORT_RUNS_RAISED = StepScaledRate(base=5.0e-5, reference_steps=2500, max_factor=6.0)
# `train.learning_rate` with `train.adapter` on and no rate given: LoRA's updates start at zero and
# want a far higher rate than full fine-tuning, and like it a higher one for shorter runs.
# bench/adapter_quality.py, MiniLM, batch 16, docs/benchmarks.md "LoRA adapters": at 100 steps 4e-3
# was the best rate tried on CoNLL (entity F1 0.747, against 0.682 at 2e-3 and 0.554 at 1e-3) and
# level with 2e-3 on SST-2 (0.800 both); at 300 steps on SST-2 4e-3 collapsed to the majority class
# (0.53) where 2e-3 scored 0.828: 2e-3 × √(400 / steps) gives 4e-3 at 100 steps, 2.3e-3 at 300
ADAPTER_RATES = StepScaledRate(base=2.0e-3, reference_steps=400, max_factor=2.0)

register(
    TaskRecord(
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
)
register(
    TaskRecord(
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
)
register(
    TaskRecord(
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
)
register(
    TaskRecord(
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
)
register(
    TaskRecord(
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
)
register(
    TaskRecord(
        name="distill",
        module="bertkit.tasks.distill.task",
        summary="Distillation: a smaller student learns a classify or ner bundle's outputs; the result is a bundle "
        "of the teacher's task.",
        section="distill",
        settings="bertkit.tasks.distill.settings:DistillConfig",
        # the student starts from the teacher itself unless model.name names another start
        # (bench/distill_quality.py: 3 of MiniLM's 6 layers, docs/distill.md)
        defaults={("model", "name"): None},
        starter={
            ("distill", "teacher"): "models/teacher",
            ("distill", "student_layers"): [0, 2, 4],
            ("data", "train"): "data/train.csv",
        },
    )
)
register(
    TaskRecord(
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
)

"""The tasks bertkit trains and runs, one registry record each. A task lives in its folder,
`bertkit/tasks/<task>/`: its record (`record.py`: name, config section, measured defaults),
settings (`settings.py`), parts (`task.py` and the modules it names) and helpers. Adding one is
that folder and one line here. bertkit/tasks/registry.py says what a record holds;
bertkit/tasks/contract/ is the contract a task's parts fulfil.

A key a config leaves out takes the task's measured value (its record's `defaults`, from the
benchmarks in docs/benchmarks.md), else its field's generic default.
"""

from __future__ import annotations

from bertkit.tasks.classify.record import RECORD as CLASSIFY
from bertkit.tasks.distill.record import RECORD as DISTILL
from bertkit.tasks.embed.record import RECORD as EMBED
from bertkit.tasks.mlm.record import RECORD as MLM
from bertkit.tasks.ner.record import RECORD as NER
from bertkit.tasks.qa.record import RECORD as QA
from bertkit.tasks.registry import TaskRecord, get_task, record, register, task_for_architecture
from bertkit.tasks.rerank.record import RECORD as RERANK

__all__ = ["TaskRecord", "get_task", "record", "register", "task_for_architecture"]

# one line a task, in the order `bertkit train --help` and the config list them
for _record in (CLASSIFY, NER, QA, MLM, EMBED, DISTILL, RERANK):
    register(_record)

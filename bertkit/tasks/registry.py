"""One record per task, from which everything else reads: the `task:` name and `bertkit train`
sub-command, the config section and its settings, the measured defaults, the architectures a
plain Hugging Face model is recognised by, and the model card's tag and example.

Light on purpose (no torch, no task code): the config and the CLI read it at import time. The
task's code is imported only when a command needs it (`record.task()`).

Adding a task is a folder whose `task.py` holds its `TASK` (a `bertkit.tasks.contract.Task`) and
whose `record.py` its record, and one line in bertkit/tasks/__init__.py; see docs/architecture.md.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from bertkit.core.errors import BertkitError, did_you_mean
from bertkit.core.learning_rates import StepScaledRate


@dataclass(frozen=True)
class TaskRecord:
    name: str  # `task: NAME` in a config, `bertkit train NAME`, `task` in bertkit.json
    module: str  # the module whose `TASK` implements the contract
    summary: str  # the help line of `bertkit train NAME`
    section: str  # the config section holding the task's own settings
    settings: str | type  # that section's pydantic model, or "module:Class" (imported when needed)
    architecture: str | None = None  # config.json `architectures` suffix of plain HF models it runs
    pipeline: str = "feature-extraction"  # the model card's pipeline tag
    # measured settings that a config leaving the key out gets: {(section, key): value}
    defaults: Mapping[tuple[str, str], Any] = field(default_factory=dict)
    # what `train.learning_rate: auto` means for this task (bertkit/core/learning_rates.py)
    learning_rate: StepScaledRate | None = None
    # what `train.learning_rate` follows when `train.adapter` is on and the config leaves the rate out
    # (auto, by this rule); None: the task takes no adapter (docs/adapters.md says why for each)
    adapter_learning_rate: StepScaledRate | None = None
    # example values `bertkit config init NAME` writes (marked there as starter values)
    starter: Mapping[tuple[str, str], Any] = field(default_factory=dict)

    def settings_class(self) -> type:
        if isinstance(self.settings, str):
            module, _, name = self.settings.partition(":")
            return getattr(importlib.import_module(module), name)
        return self.settings

    def task(self):
        """The task's implementation (its module is imported now)."""
        return importlib.import_module(self.module).TASK


_RECORDS: dict[str, TaskRecord] = {}
_listeners: list[Callable[[], None]] = []  # told when the set of tasks changes (the config schema)


def register(record: TaskRecord) -> None:
    """Add (or replace) a task."""
    _RECORDS[record.name] = record
    for listener in _listeners:
        listener()


def unregister(name: str) -> None:
    _RECORDS.pop(name, None)
    for listener in _listeners:
        listener()


def on_change(listener: Callable[[], None]) -> None:
    _listeners.append(listener)


def records() -> list[TaskRecord]:
    return list(_RECORDS.values())


def names() -> tuple[str, ...]:
    return tuple(_RECORDS)


def record(name: str) -> TaskRecord:
    if name not in _RECORDS:
        raise BertkitError(f"unknown task '{name}'{did_you_mean(name, _RECORDS)}; tasks: {', '.join(_RECORDS)}")
    return _RECORDS[name]


def get_task(name: str):
    return record(name).task()


def task_for_architecture(architectures: list[str]) -> str | None:
    """The task that runs a plain Hugging Face model, from its config's `architectures`."""
    for arch in architectures or []:
        for item in _RECORDS.values():
            if item.architecture and arch.endswith(item.architecture):
                return item.name
    return None

"""Task registry: the name in `task:` / `bertkit train NAME` to the module that implements it."""

from __future__ import annotations

import importlib

from bertkit.errors import BertkitError, did_you_mean

MODULES = {
    "classify": "bertkit.tasks.classify",
    "ner": "bertkit.tasks.ner",
    "qa": "bertkit.tasks.qa",
    "mlm-adapt": "bertkit.tasks.mlm",
    "embed": "bertkit.tasks.embed",
}
# Model architectures (config.json `architectures`) to the task that runs them, for plain HF models.
ARCHITECTURES = {
    "ForSequenceClassification": "classify",
    "ForTokenClassification": "ner",
    "ForQuestionAnswering": "qa",
    "ForMaskedLM": "mlm-adapt",
}


def get_task(name: str):
    if name not in MODULES:
        raise BertkitError(f"unknown task '{name}'{did_you_mean(name, MODULES)}; tasks: {', '.join(MODULES)}")
    return importlib.import_module(MODULES[name]).TASK


def task_for_architecture(architectures: list[str]) -> str | None:
    for arch in architectures or []:
        for suffix, task in ARCHITECTURES.items():
            if arch.endswith(suffix):
                return task
    return None

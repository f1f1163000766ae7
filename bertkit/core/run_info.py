"""A run's description: what a bundle's `bertkit.json` holds, typed and read-only.

A task's `setup` builds it from the config and the training data (plus what `tokenizer_facts`
adds once the tokenizer is known); training writes it into the bundle with the run's records;
`predict`, `evaluate`, `embed` and the model card read it back. Nothing changes it after setup:
`RunInfo` has no way to set a key, and a stage that needs a different description makes a new
one with `replace`.

Every command that opens a model reads `bertkit.json` through `read_info`, which checks it, so
a damaged file is one error naming it; a plain Hugging Face model directory without one gets a
description inferred from its `config.json` (`infer_info`).
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from bertkit.core.errors import BertkitError
from bertkit.tasks.classify.labels import PROBLEM_TYPES

INFO_FILE = "bertkit.json"
RESTORE = "restore the file, or train the model again"


class RunInfo(Mapping[str, Any]):
    """The description of a run: the task, the input settings (`max_length`, columns), labels,
    the task's own section, and, in a finished bundle, what training recorded. A read-only
    mapping (keys as in `bertkit.json`), with the keys every task has as typed attributes."""

    def __init__(self, data: Mapping[str, Any]):
        if "task" not in data:
            raise ValueError("a run's description must name its task")
        self._data = copy.deepcopy(dict(data))

    @property
    def task(self) -> str:
        return self._data["task"]

    @property
    def max_length(self) -> int:
        return self._data["max_length"]

    @property
    def labels(self) -> list[str]:
        return list(self._data.get("labels") or [])

    def replace(self, **changes: Any) -> RunInfo:
        """A new description with these keys set (this one is left as it is)."""
        return RunInfo({**self._data, **changes})

    def to_dict(self) -> dict[str, Any]:
        """A plain, independent copy, for writing `bertkit.json`."""
        return copy.deepcopy(self._data)

    def __getitem__(self, key: str) -> Any:
        return self._data[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._data)

    def __len__(self) -> int:
        return len(self._data)

    def __repr__(self) -> str:
        return f"RunInfo({self._data!r})"


def read_info(root: Path, pooling_needed: bool = True) -> RunInfo | None:
    """The checked content of `root/bertkit.json`, or None when there is none. Every command that
    runs a model reads the file here, so whatever is wrong with it is one error naming it:
    not an object, no task or an unknown one, a `max_length` that is not a positive whole
    number, labels that do not fit the model's head (classify, NER), or an embed bundle's pooling
    (checked only when it is used: `pooling_needed` is false when the user gave --pooling)."""
    from bertkit.tasks import registry

    file = root / INFO_FILE
    if not file.is_file():
        return None
    info = read_object(file, RESTORE)
    task = info.get("task")
    if task is None or task == "":
        raise BertkitError(
            f"{file} does not name the model's task (no 'task' key); restore the file, or delete it "
            "to run the model as a plain Hugging Face model"
        )
    if not isinstance(task, str) or task not in registry.names():
        known = ", ".join(registry.names())
        raise BertkitError(
            f"{file}: unknown task {_shown(task)}; 'task' must be one of {known}. {RESTORE.capitalize()}."
        )
    if "max_length" in info and not positive_int(info["max_length"]):
        raise BertkitError(
            f"{file}: 'max_length' must be a positive whole number of tokens, not {_shown(info['max_length'])}; "
            f"{RESTORE}"
        )
    if task in ("classify", "ner"):
        _check_labels(root, file, info)
    if task == "embed":
        _check_pooling(file, info, pooling_needed)
    return RunInfo(info)


def _check_labels(root: Path, file: Path, info: dict) -> None:
    labels = info.get("labels")
    if not isinstance(labels, list) or not labels or not all(isinstance(x, str) for x in labels):
        raise BertkitError(
            f"{file}: 'labels' must be a list of the model's label names, not {_shown(labels)}; {RESTORE}"
        )
    if info["task"] == "classify":
        if info.get("problem_type") not in PROBLEM_TYPES:
            raise BertkitError(
                f"{file}: 'problem_type' must be one of {', '.join(PROBLEM_TYPES)}, not "
                f"{_shown(info.get('problem_type'))}; {RESTORE}"
            )
    config_file = root / "config.json"
    config = read_object(config_file, "restore it from the original model")
    id2label, count = config.get("id2label"), config.get("num_labels")
    size = len(id2label) if isinstance(id2label, dict) and id2label else count if positive_int(count) else None
    if size is not None and size != len(labels):
        raise BertkitError(
            f"{file} lists {len(labels)} label{'s' if len(labels) != 1 else ''}, but the model's head in "
            f"{config_file} has {size} (its id2label / num_labels): the two files are not of the same model. "
            "Restore them, or train the model again."
        )


def _check_pooling(file: Path, info: dict, needed: bool) -> None:
    from bertkit.core.pooling import POOLINGS

    choices = ", ".join(POOLINGS)
    pooling = info.get("pooling")
    if needed and pooling is None:
        raise BertkitError(
            f"{file} gives no pooling for this embed bundle (no 'pooling' key); restore the file, "
            f"or pass --pooling ({choices})"
        )
    if needed and pooling not in POOLINGS:
        raise BertkitError(f"{file}: 'pooling' must be one of {choices}, not {_shown(pooling)}; {RESTORE}")
    if "normalize" in info and not isinstance(info["normalize"], bool):
        raise BertkitError(f"{file}: 'normalize' must be true or false, not {_shown(info['normalize'])}; {RESTORE}")


def positive_int(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value > 0


def _shown(value) -> str:
    return f"'{value}'" if isinstance(value, str) else json.dumps(value, ensure_ascii=False)[:80]


def read_json(path: Path, what: str):
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except UnicodeDecodeError:
        raise BertkitError(f"{path} is not UTF-8 text; {what}") from None
    except json.JSONDecodeError as err:
        raise BertkitError(f"{path}:{err.lineno}: not valid JSON ({err.msg}); {what}") from None


def read_object(path: Path, what: str) -> dict:
    """A JSON file that must hold an object (settings), checked: `what` says how to fix it."""
    data = read_json(path, what)
    if not isinstance(data, dict):
        raise not_an_object(path, data, what)
    return data


def not_an_object(path, data, what: str) -> BertkitError:
    kinds = {list: "a list", str: "a string", bool: "true or false", type(None): "null"}
    return BertkitError(f"{path} is not a JSON object (it holds {kinds.get(type(data), 'a number')}); {what}")


def infer_info(root: Path) -> RunInfo:
    from bertkit.tasks import task_for_architecture

    config = read_object(root / "config.json", "restore it from the original model")
    task = task_for_architecture(config.get("architectures", []))
    if task is None:
        raise BertkitError(
            f"{root}: a {', '.join(config.get('architectures') or ['plain encoder'])} model, which "
            "bertkit cannot run for predictions (it has no task head bertkit knows)"
        )
    id2label = config.get("id2label") or {}
    try:
        labels = [str(id2label[k]) for k in sorted(id2label, key=int)] if id2label else []
    except (AttributeError, TypeError, ValueError):
        raise BertkitError(
            f"{root / 'config.json'}: 'id2label' must map label numbers to names; restore it from the original model"
        ) from None
    problem = {
        "multi_label_classification": "multi_label",
        "regression": "regression",
    }.get(config.get("problem_type"), "single_label")
    if config.get("num_labels", len(labels)) == 1 and problem == "single_label" and len(labels) <= 1:
        problem = "regression"
    return RunInfo(
        {
            "task": task,
            "labels": labels,
            "problem_type": problem,
            "max_length": min(int(config.get("max_position_embeddings", 512)), 512),
        }
    )

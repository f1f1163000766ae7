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


def positive_int(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value > 0


def shown(value) -> str:
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


def check_labels(root: Path, file: Path, info: dict) -> None:
    """The description's labels are a list of names, as many as the model's head has outputs
    (config.json's id2label / num_labels)."""
    labels = info.get("labels")
    if not isinstance(labels, list) or not labels or not all(isinstance(x, str) for x in labels):
        raise BertkitError(
            f"{file}: 'labels' must be a list of the model's label names, not {shown(labels)}; {RESTORE}"
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

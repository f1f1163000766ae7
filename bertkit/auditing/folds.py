"""Which fold each training example is held out in, and the record of an audit in progress
(`plan.json` in its work folder) that `--resume` must agree with."""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from pathlib import Path

from bertkit.core.errors import BertkitError
from bertkit.core.outputs import write_json
from bertkit.tasks.contract.auditing import Examples

PLAN = "plan.json"


def assign(examples: Examples, folds: int, seed: int) -> list[int]:
    """A fold number (from 0) per example: stratified by class where the examples have one class
    each, so every fold holds each class's share; shuffled with `seed`."""
    import numpy as np
    from sklearn.model_selection import KFold, StratifiedKFold

    count = len(examples.given)
    if folds < 2:
        raise BertkitError(f"--folds {folds}: an audit needs at least 2 folds (each example predicted by a model "
                           "that did not train on it); 5 is the default")  # fmt: skip
    if count < folds:
        raise BertkitError(f"--folds {folds} is more than the {count} training examples; lower --folds")
    where = np.zeros(count, dtype=int)
    if examples.strata is not None:
        sizes = Counter(examples.strata)
        label, fewest = min(sizes.items(), key=lambda item: (item[1], item[0]))
        if fewest < folds:
            fix = f"Lower --folds to {fewest}" if fewest >= 2 else "Add examples of it (2 at least)"
            raise BertkitError(
                f"the label '{label}' has {fewest} training example(s), fewer than --folds {folds}: each fold must "
                f"hold out some of every label. {fix}"
            )
        splitter = StratifiedKFold(n_splits=folds, shuffle=True, random_state=seed)
        parts = splitter.split(np.zeros(count), examples.strata)
    else:
        parts = KFold(n_splits=folds, shuffle=True, random_state=seed).split(np.zeros(count))
    for number, (_, held) in enumerate(parts):
        where[held] = number
    return where.tolist()


def fingerprint(examples: Examples, settings: dict) -> str:
    """What the audit's folds depend on: every example, its place and label, and the settings."""
    digest = hashlib.sha256()
    for record, place in zip(examples.records, examples.places, strict=True):
        digest.update(json.dumps([place, record], sort_keys=True, default=str).encode())
    digest.update(json.dumps(settings, sort_keys=True, default=str).encode())
    return digest.hexdigest()


def check_plan(work: Path, plan: dict, resume: bool) -> None:
    """Start the plan in `work`, or (with --resume) check that it is the one the folds there were
    made for, naming what changed."""
    path = work / PLAN
    if resume and path.is_file():
        before = json.loads(path.read_text(encoding="utf-8"))
        changed = [key for key in plan if before.get(key) != plan[key]]
        if changed:
            shown = ", ".join(f"{key}: {before.get(key)} → {plan[key]}" if key != "examples" else
                              "the training examples or the config" for key in changed)  # fmt: skip
            raise BertkitError(
                f"--resume: the audit in {work} was started with other settings ({shown}); its folds would not "
                "fit. Run again with --overwrite to start afresh"
            )
        return
    write_json(path, plan)

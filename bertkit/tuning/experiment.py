"""What the trials of one study share: the experiment. Every trial of a study must be the same
run but for the searched keys, or the study ranks trials of different experiments together and
its best.yaml (written from the config of the run that writes it) does not reproduce the best
trial. A study keeps the experiment it was started with (an Optuna user attribute), and a
config that would continue it with another is refused, naming each key that changed.

The experiment is the resolved config, every key that can change a trial's result, less:
- the searched keys (the search space is checked on its own, against the study's trials);
- keys that cannot change a result (`NO_EFFECT`): where the outputs go, logging, data loader
  workers, the feature cache, consent to run a model's code, and `data.test` (trials never read it);
- the settings of other tasks than the config's own (and, for distill, its teachers').
Local data (files, folders, glob patterns), models, tokenizers and teachers count by their
content (SHA-256 of their files), not their path: the same files elsewhere (another machine) are
the same experiment; a file changed in place is not. A model folder's notes (its card, metrics,
plots, bertkit.json) do not count: a bundle trained again to the same weights is the same model."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

from bertkit.config import Config
from bertkit.core.errors import BertkitError
from bertkit.tasks import registry
from bertkit.tasks.distill.teacher import TEACHER_TASKS

ATTRIBUTE = "experiment"  # the study's user attribute holding it
NO_EFFECT = (
    "output_dir", "tune", "data.test", "data.cache", "train.logging_steps", "train.report_to",
    "train.dataloader_workers", "model.trust_remote_code",
)  # fmt: skip
# Files of a model folder that describe a run without changing what the model computes
# (timings, plots, the manifest's date): a bundle trained again to the same weights is the same model.
MODEL_NOTES = ("README.md", "metrics.json", "bertkit.json", "training_args.bin")
MODEL_NOTE_SUFFIXES = (".png",)


def experiment_of(cfg: Config, searched: list[str], inputs: list) -> dict:
    """{dotted key: value} for every key of the experiment; a local input (data file or folder,
    model, tokenizer, teacher) as {"path": ..., "sha256": ...}."""
    local = {str(p) for p in inputs if p and (Path(str(p)).expanduser().exists() or _is_glob(str(p)))}
    flat: dict = {}
    for key, value in _flatten(cfg.dump(), _sections_read(cfg)):
        if key in searched or any(key == skip or key.startswith(skip + ".") for skip in NO_EFFECT):
            continue
        if isinstance(value, list):
            value = [_content(v) if isinstance(v, str) and v in local else v for v in value]
        elif isinstance(value, str) and value in local:
            value = _content(value)
        flat[key] = value
    return flat


def _sections_read(cfg: Config) -> set[str]:
    """The config's sections a run of its task reads: the common ones, its task's own, and for
    distill the sections of the tasks it distils from (its teacher's settings fill them in)."""

    own = registry.record(cfg.task).section
    sections = {"task", "model", "data", "train", own}
    if cfg.task == "distill":

        sections |= {registry.record(task).section for task in TEACHER_TASKS}
    return sections


def _flatten(data: dict, sections: set[str]):
    for name, value in data.items():
        if name not in sections:
            continue
        if isinstance(value, dict):
            yield from _leaves(value, name)
        else:
            yield name, value


def _leaves(data: dict, prefix: str):
    for key, value in data.items():
        if isinstance(value, dict):
            yield from _leaves(value, f"{prefix}.{key}")
        else:
            yield f"{prefix}.{key}", value


def _is_glob(path: str) -> bool:
    return any(c in path for c in "*?[")


def _content(path: str) -> dict:
    """A local file, folder or glob pattern by its content: the SHA-256 of its files' names (from
    the folder, or the pattern's folder) and bytes. A model folder's notes do not count."""
    root = Path(path).expanduser()
    if _is_glob(path):
        import glob

        pattern = str(root)
        root = Path(os.path.dirname(pattern[: min(pattern.index(c) for c in "*?[" if c in pattern)]))
        files = sorted(Path(p) for p in glob.glob(pattern, recursive=True) if Path(p).is_file())
    elif root.is_file():
        files = [root]
    else:
        model = (root / "config.json").is_file()
        files = sorted(p for p in root.rglob("*") if p.is_file() and _counts(p, root, model))
    digest = hashlib.sha256()
    for file in files:
        digest.update(file.relative_to(root).as_posix().encode() if file != root else b"")
        digest.update(b"\0")
        with file.open("rb") as handle:
            while block := handle.read(1 << 20):
                digest.update(block)
        digest.update(b"\0")
    return {"path": path, "sha256": digest.hexdigest()}


def _counts(file: Path, root: Path, model: bool) -> bool:
    if any(part.startswith(".") for part in file.relative_to(root).parts):  # the manifest, temporaries, caches
        return False
    return not (model and (file.name in MODEL_NOTES or file.suffix in MODEL_NOTE_SUFFIXES))


def changes(before: dict, now: dict) -> list[str]:
    """`key: old → new` for each key whose value differs. A key only one experiment has counts
    when the other has one above or below it (`data.validation: null` against
    `data.validation.path: ...`: a source given or dropped); alone, it is a key of another
    bertkit version, not compared."""
    lines = []
    for key in sorted(before.keys() | now.keys()):
        if key in before and key in now:
            if not _same(before[key], now[key]):
                lines.append(f"{key}: {_shown(before[key], now[key])} → {_shown(now[key], before[key])}")
            continue
        mine, other = (before, now) if key in before else (now, before)
        related = any(o.startswith(key + ".") or key.startswith(o + ".") for o in other)
        if related and mine[key] is not None:
            old, new = ("not set", _shown(mine[key], None)) if mine is now else (_shown(mine[key], None), "not set")
            lines.append(f"{key}: {old} → {new}")
    return lines


def _same(old, new) -> bool:
    return _identity(old) == _identity(new)


def _identity(value):
    if isinstance(value, dict) and "sha256" in value:
        return ("content", value["sha256"])
    if isinstance(value, list):
        return [_identity(v) for v in value]
    return json.dumps(value, sort_keys=True)


def _shown(value, other) -> str:
    if isinstance(value, list):
        return "[" + ", ".join(_shown(v, None) for v in value) + "]"
    if isinstance(value, dict) and "sha256" in value:
        same_path = isinstance(other, dict) and other.get("path") == value["path"]
        return f"{value['path']} ({'content ' if same_path else ''}sha256 {value['sha256'][:12]})"
    return json.dumps(value) if not isinstance(value, str) else value


def check_experiment(study, name: str, experiment: dict, fresh_hint: str) -> str | None:
    """Refuse to continue `study` with another experiment than its own; a study without one (new,
    or started by a bertkit before experiments were kept) takes this one. Returns a note, or None."""
    from optuna.trial import TrialState

    stored = study.user_attrs.get(ATTRIBUTE)
    ran = any(t.state != TrialState.WAITING for t in study.get_trials(deepcopy=False))  # not only enqueued
    if stored is None or not ran:
        study.set_user_attr(ATTRIBUTE, experiment)
        if stored is None and ran:
            return (f"study '{name}' was started by a bertkit that did not record its settings: they cannot be "
                    "checked against this config's, and are recorded now")  # fmt: skip
        return None
    changed = changes(stored, experiment)
    if changed:
        raise BertkitError(
            f"study '{name}' was run with other settings than this config's:\n  " + "\n  ".join(changed) + "\n"
            "Continuing it would rank trials of different experiments together, and best.yaml would not reproduce "
            f"its best trial. Set them back to continue the study, or start a new one: {fresh_hint}"
        )
    return None

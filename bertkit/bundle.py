"""The model bundle: a Hugging Face model directory plus `bertkit.json`, which says what bertkit
needs to run it (task, labels, input settings, metrics). Plain HF model directories work too:
their settings are inferred from `config.json`."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from bertkit.errors import BertkitError

INFO_FILE = "bertkit.json"


@dataclass
class Bundle:
    path: Path
    info: dict = field(default_factory=dict)
    trust_remote_code: bool = False

    @property
    def task(self) -> str:
        return self.info["task"]

    def load_tokenizer(self):
        from bertkit.tokenization import load_tokenizer

        return load_tokenizer(str(self.path), trust_remote_code=self.trust_remote_code)

    def load_model(self, auto_class: str, device=None):
        import transformers

        from bertkit import models
        from bertkit.inference import pick_device

        models.quiet_transformers()
        loader = getattr(transformers, auto_class)
        model = models.from_pretrained(loader, str(self.path), self.trust_remote_code)
        limit = models.position_limit(model.config)
        self.info.setdefault("max_length", min(limit or 512, 512))  # as for a plain Hugging Face model
        if limit and self.info["max_length"] > limit:
            # bundles of older versions could record a length the model cannot read
            self.info["max_length"] = limit
        return model.to(pick_device(device)).eval()


def open_bundle(path: str, trust_remote_code: bool = False) -> Bundle:
    from bertkit.models import check_custom_code

    root = Path(path)
    if not root.is_dir():
        raise BertkitError(f"--model {path}: not a directory. Give a directory written by `bertkit train`.")
    if not (root / "config.json").is_file():
        raise BertkitError(
            f"--model {path}: not a model directory (no config.json). Give a directory written "
            "by `bertkit train` or by a Hugging Face model's `save_pretrained`."
        )
    check_custom_code(str(root), trust_remote_code)
    info = read_info(root)
    return Bundle(root, info if info is not None else _infer_info(root), trust_remote_code)


RESTORE = "restore the file, or train the model again"


def read_info(root: Path, pooling_needed: bool = True) -> dict | None:
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
    return info


def _check_labels(root: Path, file: Path, info: dict) -> None:
    labels = info.get("labels")
    if not isinstance(labels, list) or not labels or not all(isinstance(x, str) for x in labels):
        raise BertkitError(
            f"{file}: 'labels' must be a list of the model's label names, not {_shown(labels)}; {RESTORE}"
        )
    if info["task"] == "classify":
        from bertkit.tasks.classify.task import HF_PROBLEM

        if info.get("problem_type") not in HF_PROBLEM:
            raise BertkitError(
                f"{file}: 'problem_type' must be one of {', '.join(HF_PROBLEM)}, not "
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
    from bertkit.embeddings.encoder import POOLINGS

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


def _infer_info(root: Path) -> dict:
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
    return {
        "task": task,
        "labels": labels,
        "problem_type": problem,
        "max_length": min(int(config.get("max_position_embeddings", 512)), 512),
    }

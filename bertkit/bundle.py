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
        if limit and int(self.info.get("max_length") or limit) > limit:
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
    info_file = root / INFO_FILE
    if info_file.is_file():
        info = read_json(info_file, "it describes the bundle: restore it, or train the model again")
        if not isinstance(info, dict) or not info.get("task"):
            raise BertkitError(
                f"{info_file} does not name the model's task (no 'task' key); restore the file, or delete it "
                "to run the model as a plain Hugging Face model"
            )
        from bertkit.tasks import MODULES

        if info["task"] not in MODULES:
            raise BertkitError(f"{info_file}: unknown task '{info['task']}' (bertkit knows {', '.join(MODULES)})")
        return Bundle(root, info, trust_remote_code)
    return Bundle(root, _infer_info(root), trust_remote_code)


def read_json(path: Path, what: str):
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except UnicodeDecodeError:
        raise BertkitError(f"{path} is not UTF-8 text; {what}") from None
    except json.JSONDecodeError as err:
        raise BertkitError(f"{path}:{err.lineno}: not valid JSON ({err.msg}); {what}") from None


def _infer_info(root: Path) -> dict:
    from bertkit.tasks import task_for_architecture

    config = read_json(root / "config.json", "restore it from the original model")
    if not isinstance(config, dict):
        raise BertkitError(f"{root / 'config.json'} is not a JSON object; restore it from the original model")
    task = task_for_architecture(config.get("architectures", []))
    if task is None:
        raise BertkitError(
            f"{root}: a {', '.join(config.get('architectures') or ['plain encoder'])} model, which "
            "bertkit cannot run for predictions (it has no task head bertkit knows)"
        )
    id2label = config.get("id2label") or {}
    labels = [id2label[k] for k in sorted(id2label, key=int)] if id2label else []
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

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

    @property
    def task(self) -> str:
        return self.info["task"]

    def load_tokenizer(self):
        from bertkit.tokenization import load_tokenizer

        return load_tokenizer(str(self.path))

    def load_model(self, auto_class: str, device=None):
        import transformers

        from bertkit.inference import pick_device
        from bertkit.models import quiet_transformers

        quiet_transformers()
        loader = getattr(transformers, auto_class)
        try:
            model = loader.from_pretrained(str(self.path))
        except (OSError, ValueError) as err:
            raise BertkitError(f"{self.path}: cannot load the model: {err}") from None
        return model.to(pick_device(device)).eval()


def open_bundle(path: str) -> Bundle:
    root = Path(path)
    if not root.is_dir():
        raise BertkitError(f"--model {path}: not a directory. Give a directory written by `bertkit train`.")
    if not (root / "config.json").is_file():
        raise BertkitError(
            f"--model {path}: not a model directory (no config.json). Give a directory written "
            "by `bertkit train` or by a Hugging Face model's `save_pretrained`."
        )
    info_file = root / INFO_FILE
    if info_file.is_file():
        return Bundle(root, json.loads(info_file.read_text(encoding="utf-8")))
    return Bundle(root, _infer_info(root))


def _infer_info(root: Path) -> dict:
    from bertkit.tasks import task_for_architecture

    config = json.loads((root / "config.json").read_text(encoding="utf-8"))
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

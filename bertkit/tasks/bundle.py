"""The model bundle: a Hugging Face model directory plus `bertkit.json`, which says what bertkit
needs to run it (task, labels, input settings, metrics). Plain HF model directories work too:
their settings are inferred from `config.json` (`infer_info`). Opening one means knowing its task:
`read_info` checks the description as every task needs it, then by the task's own rules."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from bertkit.core import models, onnx_runtime
from bertkit.core.adapters.loading import load_weights
from bertkit.core.errors import BertkitError
from bertkit.core.inference import in_precision, pick_device, precision_for
from bertkit.core.models import check_custom_code
from bertkit.core.onnx_runtime import OnnxModel, choose_runtime
from bertkit.core.run_info import INFO_FILE, RESTORE, RunInfo, positive_int, read_object, shown
from bertkit.core.tokenization import load_tokenizer
from bertkit.tasks import registry


@dataclass
class Bundle:
    path: Path
    info: RunInfo
    trust_remote_code: bool = False
    runtime: str = "torch"  # or "onnx": an exported bundle run by onnxruntime (bertkit.core.onnx_runtime)
    # the directory that was opened (device, inode): `--overwrite` publishes a new directory under the
    # name, so a bundle replaced while its files are being read is noticed (`_unchanged`)
    opened: tuple | None = field(default=None, compare=False)

    def __post_init__(self):
        if self.opened is None:
            self.opened = directory_identity(self.path)

    def _unchanged(self, loaded):
        check_unchanged(self.path, self.opened)
        return loaded

    @property
    def task(self) -> str:
        return self.info["task"]

    def load_tokenizer(self):
        if self.runtime == "onnx":

            return self._unchanged(onnx_runtime.load_tokenizer(self.path))

        return self._unchanged(load_tokenizer(str(self.path), trust_remote_code=self.trust_remote_code))

    def load_model(self, auto_class: str, device=None, precision: str = "auto", shared=None, merged: bool = False):
        """The bundle's model on `device` (`inference.pick_device`), in `precision`
        (`inference.precision_for`: auto is half precision on a CUDA GPU, fp32 elsewhere). An adapter
        bundle is put on its base (bertkit/core/adapters/loading.py), kept apart from its weights (with
        `shared`, a `SharedBases`, on base weights shared with the other adapter bundles of the same
        base), or `merged` into them (for writing a new model: merge, export)."""
        if self.runtime == "onnx":

            refuse_half_onnx(precision, self.path)
            return self._unchanged(OnnxModel(self.path))
        import transformers


        models.quiet_transformers()
        loader = getattr(transformers, auto_class)
        model = load_weights(loader, str(self.path), self.trust_remote_code, shared, merged)
        limit = models.position_limit(model.config)
        length = self.info.get("max_length", min(limit or 512, 512))  # as for a plain Hugging Face model
        if limit and length > limit:
            length = limit  # bundles of older versions could record a length the model cannot read
        if length != self.info.get("max_length"):
            self.info = self.info.replace(max_length=length)
        place = pick_device(device)
        return in_precision(self._unchanged(model).to(place), precision_for(precision, place)).eval()


def refuse_half_onnx(precision: str, path) -> None:
    """An ONNX bundle runs as it was exported (fp32 or int8): half precision cannot be honoured."""
    if precision in ("bf16", "fp16"):
        raise BertkitError(
            f"--precision {precision}: {path} is an ONNX bundle, which runs as it was exported (fp32 or int8); "
            "drop --precision, or give --runtime torch"
        )


def directory_identity(path) -> tuple | None:
    """What tells one directory from another published under the same name (device, inode)."""
    try:
        found = os.stat(path)
    except OSError:
        return None
    return found.st_dev, found.st_ino


def check_unchanged(path, opened: tuple | None) -> None:
    """An error if the model directory at `path` is no longer the one that was opened (`opened`,
    its `directory_identity` before its first file was read): its files could then come from two
    models. `--overwrite` publishes a new directory under the name in one step, so the name always
    holds a whole model, but a command reads its files one by one."""
    if opened is not None and directory_identity(path) != opened:
        raise BertkitError(
            f"--model {path} was replaced while it was being read (another run published a new one there); "
            "run the command again"
        )


def open_bundle(path: str, trust_remote_code: bool = False, runtime: str | None = None) -> Bundle:
    """The bundle at `path`, to be run with `runtime` (auto, torch or onnx; None is auto)."""

    root = Path(path)
    if not path or not root.exists():
        raise BertkitError(f"--model {path!r}: not found. Give a directory written by `bertkit train`.")
    if not root.is_dir():
        raise BertkitError(f"--model {path}: not a directory. Give a directory written by `bertkit train`.")
    if not (root / "config.json").is_file():
        raise BertkitError(
            f"--model {path}: not a model directory (no config.json). Give a directory written "
            "by `bertkit train` or by a Hugging Face model's `save_pretrained`."
        )
    opened = directory_identity(root)  # before any of its files is read
    chosen = choose_runtime(root, runtime)
    if chosen == "torch":
        check_custom_code(str(root), trust_remote_code)
    info = read_info(root)
    return Bundle(root, info if info is not None else infer_info(root), trust_remote_code, chosen, opened)


def read_info(root: Path, complete: bool = True) -> RunInfo | None:
    """The checked content of `root/bertkit.json`, or None when there is none. Every command that
    runs a model reads the file here, so whatever is wrong with it is one error naming it:
    not an object, no task or an unknown one, a `max_length` that is not a positive whole
    number, or what the task's own check (`Task.check_info`) refuses: labels that do not fit the
    model's head (classify, NER), an embed bundle's pooling. `complete` is false for a command that
    supplies some settings itself (embed's --pooling) or only shows the bundle."""
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
            f"{file}: unknown task {shown(task)}; 'task' must be one of {known}. {RESTORE.capitalize()}."
        )
    if "max_length" in info and not positive_int(info["max_length"]):
        raise BertkitError(
            f"{file}: 'max_length' must be a positive whole number of tokens, not {shown(info['max_length'])}; "
            f"{RESTORE}"
        )
    prediction = registry.get_task(task).prediction
    if prediction is not None:
        prediction.check_info(root, file, info, complete)
    return RunInfo(info)


def infer_info(root: Path) -> RunInfo:
    config = read_object(root / "config.json", "restore it from the original model")
    task = registry.task_for_architecture(config.get("architectures", []))
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

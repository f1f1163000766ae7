"""The model bundle: a Hugging Face model directory plus `bertkit.json`, which says what bertkit
needs to run it (task, labels, input settings, metrics). Plain HF model directories work too:
their settings are inferred from `config.json`."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from bertkit.core.errors import BertkitError
from bertkit.core.run_info import RunInfo, infer_info, read_info


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
            from bertkit.core import onnx_runtime

            return self._unchanged(onnx_runtime.load_tokenizer(self.path))
        from bertkit.core.tokenization import load_tokenizer

        return self._unchanged(load_tokenizer(str(self.path), trust_remote_code=self.trust_remote_code))

    def load_model(self, auto_class: str, device=None, precision: str = "auto", shared=None, merged: bool = False):
        """The bundle's model on `device` (`inference.pick_device`), in `precision`
        (`inference.precision_for`: auto is half precision on a CUDA GPU, fp32 elsewhere). An adapter
        bundle is put on its base (bertkit/core/adapters/loading.py), kept apart from its weights (with
        `shared`, a `SharedBases`, on base weights shared with the other adapter bundles of the same
        base), or `merged` into them (for writing a new model: merge, export)."""
        if self.runtime == "onnx":
            from bertkit.core.onnx_runtime import OnnxModel

            refuse_half_onnx(precision, self.path)
            return self._unchanged(OnnxModel(self.path))
        import transformers

        from bertkit.core import models
        from bertkit.core.adapters.loading import load_weights
        from bertkit.core.inference import in_precision, pick_device, precision_for

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
    from bertkit.core.models import check_custom_code
    from bertkit.core.onnx_runtime import choose_runtime

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

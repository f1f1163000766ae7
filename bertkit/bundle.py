"""The model bundle: a Hugging Face model directory plus `bertkit.json`, which says what bertkit
needs to run it (task, labels, input settings, metrics). Plain HF model directories work too:
their settings are inferred from `config.json`."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from bertkit.errors import BertkitError
from bertkit.run_info import RunInfo, infer_info, read_info


@dataclass
class Bundle:
    path: Path
    info: RunInfo
    trust_remote_code: bool = False
    runtime: str = "torch"  # or "onnx": an exported bundle run by onnxruntime (bertkit.onnx_runtime)

    @property
    def task(self) -> str:
        return self.info["task"]

    def load_tokenizer(self):
        if self.runtime == "onnx":
            from bertkit import onnx_runtime

            return onnx_runtime.load_tokenizer(self.path)
        from bertkit.tokenization import load_tokenizer

        return load_tokenizer(str(self.path), trust_remote_code=self.trust_remote_code)

    def load_model(self, auto_class: str, device=None):
        if self.runtime == "onnx":
            from bertkit.onnx_runtime import OnnxModel

            return OnnxModel(self.path)
        import transformers

        from bertkit import models
        from bertkit.inference import pick_device

        models.quiet_transformers()
        loader = getattr(transformers, auto_class)
        model = models.weights_from_pretrained(loader, str(self.path), self.trust_remote_code)
        limit = models.position_limit(model.config)
        length = self.info.get("max_length", min(limit or 512, 512))  # as for a plain Hugging Face model
        if limit and length > limit:
            length = limit  # bundles of older versions could record a length the model cannot read
        if length != self.info.get("max_length"):
            self.info = self.info.replace(max_length=length)
        return model.to(pick_device(device)).eval()


def open_bundle(path: str, trust_remote_code: bool = False, runtime: str | None = None) -> Bundle:
    """The bundle at `path`, to be run with `runtime` (auto, torch or onnx; None is auto)."""
    from bertkit.models import check_custom_code
    from bertkit.onnx_runtime import choose_runtime

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
    chosen = choose_runtime(root, runtime)
    if chosen == "torch":
        check_custom_code(str(root), trust_remote_code)
    info = read_info(root)
    return Bundle(root, info if info is not None else infer_info(root), trust_remote_code, chosen)

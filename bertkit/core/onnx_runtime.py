"""Running an exported bundle (`bertkit export`) with onnxruntime, without torch: the ONNX model
behind the same call the tasks make on a PyTorch model (`model(**inputs)` giving an output with
`logits`, `start_logits` / `end_logits` or `sentence_embedding`, as numpy arrays), the bundle's
tokenizer loaded through its own tokenizer class (transformers' tokenizer classes import no
torch; `AutoTokenizer` does), and which runtime a bundle is run with.

Nothing here imports torch or transformers' modelling code: `tests/test_export_onnx.py` runs
`bertkit predict` on an ONNX bundle in a fresh process and checks `sys.modules`.
"""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import numpy as np

from bertkit.core import japanese
from bertkit.core.errors import BertkitError, first_line
from bertkit.core.extras import install_command

ONNX_FILE = "model.onnx"
TORCH_WEIGHTS = (
    "model.safetensors",
    "pytorch_model.bin",
    "model.safetensors.index.json",
    "pytorch_model.bin.index.json",
)
RUNTIMES = ("auto", "torch", "onnx")
# config.json keys of families that name the standard sizes otherwise (DistilBERT's `dim`, ...):
# the tasks read `hidden_size` (an empty text's vector), as a torch model's config gives it
CONFIG_ALIASES = {"hidden_size": ("dim", "d_model", "n_embd")}


def need_onnx(job: str, module: str = "onnxruntime"):
    """The module `job` needs from the `onnx` extra, or one error naming the install command."""
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError:
        raise BertkitError(f"{job} needs {module}, which is not installed: {install_command('onnx')}") from None


def holds_onnx(path: Path) -> bool:
    return (Path(path) / ONNX_FILE).is_file()


def holds_torch(path: Path) -> bool:
    return any((Path(path) / name).is_file() for name in TORCH_WEIGHTS)


def choose_runtime(path: Path, runtime: str | None) -> str:
    """torch or onnx for the bundle at `path`: `auto` (or None) by what the bundle holds."""
    runtime = runtime or "auto"
    if runtime not in RUNTIMES:
        raise BertkitError(f"--runtime {runtime}: use one of {', '.join(RUNTIMES)}")
    onnx, torch = holds_onnx(path), holds_torch(path)
    if runtime == "onnx" and not onnx:
        raise BertkitError(
            f"--runtime onnx: {path} holds no {ONNX_FILE}; make an ONNX bundle of it with "
            f"`bertkit export --model {path} --format onnx`, then run that"
        )
    if runtime == "torch" and not torch and onnx:
        raise BertkitError(
            f"--runtime torch: {path} is an ONNX bundle (no PyTorch weights); run it with --runtime onnx, "
            "or give the bundle it was exported from"
        )
    if runtime == "auto":
        return "onnx" if onnx and not torch else "torch"
    return runtime


class OnnxModel:
    """An exported model on onnxruntime's CPU provider; `model(**inputs)` runs one batch."""

    runtime = "onnx"

    def __init__(self, path: Path, threads: int | None = None, file: str = ONNX_FILE):
        ort = need_onnx("running an ONNX bundle")
        self.path = Path(path)
        options = ort.SessionOptions()
        if threads:
            options.intra_op_num_threads = threads
            options.inter_op_num_threads = 1
        try:
            self.session = ort.InferenceSession(str(self.path / file), options, providers=["CPUExecutionProvider"])
        except Exception as err:  # onnxruntime raises its own Fail / InvalidGraph classes
            reason = first_line(err)
            raise BertkitError(
                f"{self.path / file}: onnxruntime cannot load it ({reason}); export the bundle again"
            ) from None
        self.input_names = [i.name for i in self.session.get_inputs()]
        self.output_names = [o.name for o in self.session.get_outputs()]
        self.config = read_config(self.path)

    def __call__(self, **inputs) -> SimpleNamespace:
        feed = {}
        for name in self.input_names:
            if name in inputs:
                feed[name] = np.asarray(inputs[name], dtype=np.int64)
            elif name == "token_type_ids":  # a tokenizer that gives none: one segment, as BERT reads it
                feed[name] = np.zeros_like(np.asarray(inputs["input_ids"], dtype=np.int64))
            else:
                raise BertkitError(
                    f"{self.path / ONNX_FILE} needs the input {name!r}, which the tokenizer does not give"
                )
        return SimpleNamespace(**dict(zip(self.output_names, self.session.run(None, feed), strict=True)))

    def eval(self) -> OnnxModel:
        return self


def read_config(path: Path) -> SimpleNamespace:
    """config.json as attributes (`hidden_size`, `max_position_embeddings`, `id2label`, ...)."""
    file = Path(path) / "config.json"
    try:
        values = json.loads(file.read_text(encoding="utf-8"))
    except (OSError, ValueError) as err:
        raise BertkitError(f"{file}: cannot read it ({err}); export the bundle again") from None
    if not isinstance(values, dict):
        return SimpleNamespace()
    for name, aliases in CONFIG_ALIASES.items():  # as transformers' config classes map them
        found = next((values[a] for a in aliases if a in values), None)
        if name not in values and found is not None:
            values[name] = found
    return SimpleNamespace(**values)


def load_tokenizer(path: Path):
    """The bundle's tokenizer through the class its tokenizer_config.json names, imported by name
    from transformers (a tokenization module, never a modelling one), else the generic fast one."""
    import transformers


    config_file = Path(path) / "tokenizer_config.json"
    named = None
    if config_file.is_file():
        try:
            named = json.loads(config_file.read_text(encoding="utf-8")).get("tokenizer_class")
        except (OSError, ValueError, AttributeError):
            named = None
    cls = getattr(transformers, named, None) if isinstance(named, str) and named.endswith("Tokenizer") else None
    if cls is None or "tokenization" not in getattr(cls, "__module__", ""):
        cls = transformers.PreTrainedTokenizerFast
    try:
        tokenizer = cls.from_pretrained(str(path))
        tokenizer("a")
    except Exception as err:
        reason = first_line(err)
        raise BertkitError(f"{path}: cannot load its tokenizer ({reason}); export the bundle again") from None
    return japanese.with_token_types(tokenizer)

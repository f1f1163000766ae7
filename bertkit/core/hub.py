"""The Hugging Face Hub, approached carefully: offline mode, and a fast failure when it is out of reach.

Without this, a hub name on a machine with no network costs the user ~45 s of retries and a
traceback; with it, they get one message within a few seconds saying what to do.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import socket
from pathlib import Path
from urllib.parse import urlparse

from bertkit.core.errors import BertkitError

_TRUE = {"1", "true", "yes", "on"}


def offline() -> bool:
    return os.environ.get("HF_HUB_OFFLINE", "").strip().lower() in _TRUE


def go_offline() -> None:
    """Make every Hugging Face library stay off the network (`--offline`). Call before importing them."""
    os.environ["HF_HUB_OFFLINE"] = "1"
    os.environ["HF_DATASETS_OFFLINE"] = "1"


@functools.lru_cache(maxsize=1)
def reachable(timeout: float = 3.0) -> bool:
    endpoint = os.environ.get("HF_ENDPOINT", "https://huggingface.co")
    url = urlparse(endpoint)
    port = url.port or (443 if url.scheme == "https" else 80)
    try:
        with socket.create_connection((url.hostname, port), timeout=timeout):
            return True
    except OSError:
        return False


def require(what: str, hint: str) -> None:
    """Raise a clear error when `what` (e.g. "model 'bert-base-uncased'") needs a Hub we cannot reach."""
    if offline():
        raise BertkitError(
            f"{what} is not on this machine, and offline mode is on (HF_HUB_OFFLINE=1), so it "
            f"cannot be downloaded. {hint}"
        )
    if not reachable():
        raise BertkitError(
            f"{what} must be downloaded from the Hugging Face Hub, which cannot be reached from "
            f"this machine (no network?). {hint}"
        )


def sentence_files(repo: str, revision: str | None = None) -> tuple[Path | None, bool]:
    """The snapshot folder (in the Hugging Face cache) holding the sentence-transformers files of Hub
    model `repo`, fetched when the Hub is there: modules.json, its pooling module's config.json,
    sentence_bert_config.json. (None, True) when the model has no modules.json (not a
    sentence encoder); (None, False) when what it is cannot be known: offline or with the Hub out
    of reach, modules.json or its pooling module's config.json is not in the cache (nor known to be
    absent from the Hub), or the Hub refused it (a gated or unknown repo, the network)."""
    from huggingface_hub import hf_hub_download, try_to_load_from_cache
    from huggingface_hub.errors import EntryNotFoundError

    cached_only = offline() or not reachable()

    def fetch(name: str) -> Path | None:
        """The file's path; None when it does not exist in the repo; LookupError when not known."""
        if cached_only:
            found = try_to_load_from_cache(repo, name, revision=revision)
            if isinstance(found, str):
                return Path(found)
            if found is None:  # neither cached nor recorded as missing
                raise LookupError(name)
            return None  # recorded as absent from the repo when it was last fetched
        try:
            return Path(hf_hub_download(repo, name, revision=revision))
        except EntryNotFoundError:
            return None

    try:
        modules = fetch("modules.json")
    except Exception:  # not known: not in the cache offline, or the Hub refused it (gated, unknown, network)
        return None, False
    if modules is None:
        return None, True
    try:
        listed = json.loads(modules.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return modules.parent, True  # a damaged modules.json is named when it is read (embeddings/encoder.py)
    pooling = [
        m["path"]
        for m in (listed if isinstance(listed, list) else [])
        if isinstance(m, dict) and str(m.get("type", "")).endswith("Pooling") and isinstance(m.get("path"), str)
    ]
    with contextlib.suppress(Exception):  # only the longest text it reads: the model's limit stands without it
        fetch("sentence_bert_config.json")
    try:
        for path in pooling:
            if fetch(f"{path}/config.json" if path else "config.json") is None:
                return None, False  # a pooling module without its settings: its pooling is not known
    except Exception:  # the pooling module's settings could not be read: its pooling is not known
        return None, False
    return modules.parent, True

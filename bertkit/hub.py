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

from bertkit.errors import BertkitError

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
    model `repo`, fetched when the Hub is there: modules.json, the config.json of each module it
    names, sentence_bert_config.json. (None, True) when the model has no modules.json (not a
    sentence encoder); (None, False) when that cannot be known: offline, or the Hub out of reach,
    and the file not in the cache."""
    from huggingface_hub import hf_hub_download
    from huggingface_hub.errors import EntryNotFoundError, LocalEntryNotFoundError

    cached_only = offline() or not reachable()  # the cache is still read

    def fetch(name: str) -> Path | None:
        try:
            return Path(hf_hub_download(repo, name, revision=revision, local_files_only=cached_only))
        except LocalEntryNotFoundError:
            raise
        except EntryNotFoundError:
            return None

    try:
        modules = fetch("modules.json")
    except Exception:  # offline and not cached, the Hub out of reach, a gated or unknown repo: not known
        return None, False
    if modules is None:
        return None, True
    folder = modules.parent
    try:
        listed = json.loads(modules.read_text(encoding="utf-8"))
        paths = [m["path"] for m in listed if isinstance(m, dict) and isinstance(m.get("path"), str) and m["path"]]
    except (ValueError, TypeError):
        return folder, True  # a damaged modules.json is named when it is read (embeddings/encoder.py)
    for name in ["sentence_bert_config.json", *(f"{path}/config.json" for path in paths)]:
        with contextlib.suppress(Exception):  # what could not be fetched is read as absent
            fetch(name)
    return folder, True

"""The Hugging Face Hub, approached carefully: offline mode, and a fast failure when it is out of reach.

Without this, a hub name on a machine with no network costs the user ~45 s of retries and a
traceback; with it, they get one message within a few seconds saying what to do.
"""

from __future__ import annotations

import functools
import os
import socket
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

"""Where bertkit keeps what it can make again (tokenized features, corpus vectors): $BERTKIT_CACHE,
else the XDG cache folder."""

from __future__ import annotations

import os
from pathlib import Path


def cache_root() -> Path:
    """The folder holding bertkit's caches ($BERTKIT_CACHE, else the XDG cache folder)."""
    given = os.environ.get("BERTKIT_CACHE")
    if given:
        return Path(given).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(xdg) / "bertkit"

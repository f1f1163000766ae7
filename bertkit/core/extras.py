"""What installs an optional part of bertkit (an extra of pyproject.toml: ja, onnx, serve, tune, audit,
postgres, index, adapters). bertkit is installed from its repository, not from PyPI, so `pip install
'bertkit[onnx]'` would fail: the command names the extra's packages themselves, read from the
installed package's own metadata (so it never drifts from pyproject.toml), and the form for a
checkout."""

from __future__ import annotations

import functools


@functools.cache
def packages(extra: str) -> tuple[str, ...]:
    """The requirements that `extra` adds (`onnxruntime>=1.17`, ...), or () when bertkit's metadata
    cannot be read."""
    from importlib import metadata

    from packaging.requirements import Requirement

    try:
        required = metadata.requires("bertkit") or []
    except metadata.PackageNotFoundError:
        return ()
    found = []
    for line in required:
        requirement = Requirement(line)
        marker = requirement.marker
        if marker is None or marker.evaluate({"extra": ""}) or not marker.evaluate({"extra": extra}):
            continue
        extras = f"[{','.join(sorted(requirement.extras))}]" if requirement.extras else ""
        found.append(f"{requirement.name}{extras}{requirement.specifier}")
    return tuple(found)


def install_command(extra: str) -> str:
    """One line that says how to install `extra`: its packages, and the checkout's form."""
    named = " ".join(f"'{p}'" for p in packages(extra))
    checkout = f"pip install -e '.[{extra}]' in a bertkit checkout"
    return f"pip install {named} (or {checkout})" if named else checkout

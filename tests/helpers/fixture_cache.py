"""Built fixtures (tiny models, data files, trained bundles) kept on disk: built once for all the
pytest-xdist workers of a session, and kept for the sessions after it while nothing that made them
changes (docs/ci.md, "The fixture cache").

An entry is a folder `<cache>/<name>-<key>`. The key hashes everything that can change what is
built: the recipe (the settings, with the paths of the entries it is built from), every file of
`bertkit/` and `tests/helpers/`, `tests/conftest.py`, the other files the recipe names, and the
versions of Python and of the libraries that train and tokenize. A change to any of them builds a
new entry; an entry is never used with code it was not built with. A file lock around each entry
makes one process build it while the others wait. An entry counts once its manifest (every
file's sha256) is written, and each session checks an entry against its manifest before using it:
one found changed (a test wrote into it) or cut short (a killed build) is built again.

The cache is `.pytest_cache/d/bertkit-fixtures` beside the tests, or the folder BERTKIT_TEST_CACHE
names; `pytest --cache-clear`, `make clean` or removing the folder clears it.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import inspect
import json
import os
import shutil
import sys
from collections.abc import Callable, Iterable
from functools import cache
from pathlib import Path

from filelock import FileLock

ROOT = Path(__file__).resolve().parents[2]
MANIFEST = ".fixture-manifest.json"
OUTPUT = "@OUTPUT@"  # where a trained bundle's recipe names its output_dir (tests/conftest.py, trained_bundle)
LIBRARIES = ("torch", "transformers", "tokenizers", "datasets", "accelerate", "peft", "numpy", "safetensors")
_checked: dict[Path, bool] = {}  # the entries this process has checked or built


def cache_root() -> Path:
    given = os.environ.get("BERTKIT_TEST_CACHE")
    return Path(given) if given else ROOT / ".pytest_cache" / "d" / "bertkit-fixtures"


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


@cache
def code_hash() -> str:
    """Every file of bertkit/ and tests/helpers/ and tests/conftest.py (by content), Python's version
    and the libraries'."""
    digest = hashlib.sha256(sys.version.encode())
    for library in LIBRARIES:
        try:
            digest.update(f"{library}=={importlib.metadata.version(library)}".encode())
        except importlib.metadata.PackageNotFoundError:
            digest.update(f"{library} absent".encode())
    paths = [ROOT / "tests" / "conftest.py"]
    for folder in (ROOT / "bertkit", ROOT / "tests" / "helpers"):
        paths += sorted(p for p in folder.rglob("*") if p.is_file() and "__pycache__" not in p.parts)
    for path in paths:
        digest.update(str(path.relative_to(ROOT)).encode() + b"\0" + _sha256(path).encode())
    return digest.hexdigest()


def _manifest(folder: Path) -> dict[str, str]:
    return {
        str(path.relative_to(folder)): _sha256(path)
        for path in sorted(folder.rglob("*"))
        if path.is_file() and path.name != MANIFEST
    }


def _intact(folder: Path) -> bool:
    try:
        kept = json.loads((folder / MANIFEST).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return kept == _manifest(folder)


def _source(function: Callable) -> str:
    """A build function's own code, which may sit in a test file (not in the code hash)."""
    try:
        return inspect.getsource(function)
    except (OSError, TypeError):
        return function.__code__.co_code.hex()


def built(name: str, recipe: str, build: Callable[[Path], object], files: Iterable[Path] = ()) -> Path:
    """The folder `build(folder)` fills for this `recipe`, built now or taken from the cache. The
    key holds the recipe (what a test's settings are: say them all), `build`'s source, and `files`,
    the files outside bertkit/ and tests/helpers/ that the build reads (by their content)."""
    digest = hashlib.sha256(f"{code_hash()}\0{name}\0{recipe}\0{_source(build)}".encode())
    for path in files:
        digest.update(_sha256(Path(path)).encode())
    root = cache_root()
    folder = root / f"{name}-{digest.hexdigest()[:16]}"
    if _checked.get(folder):
        return folder
    root.mkdir(parents=True, exist_ok=True)
    with FileLock(str(folder) + ".lock"):
        if not _intact(folder):
            shutil.rmtree(folder, ignore_errors=True)
            folder.mkdir()
            build(folder)  # at its final path: a bundle records the paths it was trained with
            (folder / MANIFEST).write_text(json.dumps(_manifest(folder), indent=0), encoding="utf-8")
        _checked[folder] = True
    return folder

"""Writing an index folder (`index_folder` describes its layout): a new folder published whole, or
a generation added to one, each generation flushed before index.json is replaced in one step to
name it, and the generations that no reader can still be on removed afterwards."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import stat
from collections.abc import Callable
from pathlib import Path

from bertkit import __version__
from bertkit.core.outputs import MANIFEST, cannot_write, staged_dir, staging_dir, write_json, write_manifest
from bertkit.core.outputs.files import follow_umask_tree, is_leftover
from bertkit.embeddings import ann
from bertkit.embeddings.index_folder import GENERATION_KIND, INFO, KIND, TEXTS, generation_name, named_now
from bertkit.embeddings.index_info import FORMAT, GENERATION_NAME


def _sync(folder: Path) -> None:
    """Flush a generation's files and its folder to the disk before index.json names it, so that a
    power cut after the switch cannot leave index.json naming files still in memory."""
    for item in [*folder.iterdir(), folder]:
        _fsync(item)


def _fsync(path: Path) -> None:
    with contextlib.suppress(OSError):
        fd = os.open(path, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def _generations(folder: Path) -> dict[int, Path]:
    found = {}
    for item in folder.iterdir():
        match = GENERATION_NAME.fullmatch(item.name)
        if match and item.is_dir() and not item.is_symlink():
            found[int(match[1])] = item
    return found


def _fill_generation(staged: Path, fill: Callable[[Path], dict]) -> dict:
    """The generation's data files, written by `fill(dir)` (which returns index.json's other
    fields), its manifest, all flushed."""

    info = fill(staged)
    follow_umask_tree(staged)
    write_manifest(staged, GENERATION_KIND)
    _sync(staged)
    return info


def _write_info(folder: Path, info: dict, name: str) -> dict:
    """Replace `folder`/index.json in one step by `info` naming the generation `name` (written
    beside it, flushed, renamed over it)."""

    rest = {k: v for k, v in info.items() if k not in ("format", "generation")}
    record = {"format": FORMAT, "generation": name, **rest}  # the two first, for a reader's eye
    _clear_odd(folder / INFO)
    write_json(folder / INFO, record, sync=True)
    _fsync(folder)
    return record


def _clear_odd(path: Path) -> None:
    """Remove what stands at `path` in place of a file (a link, a FIFO, an empty folder: put there
    by hand, refused by readers), so that writing it replaces it rather than writes through it."""
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        return
    if stat.S_ISDIR(mode):
        path.rmdir()  # a folder holding something is not emptied (check_output_dir names what it holds)
    elif not stat.S_ISREG(mode):
        path.unlink()


def publish_new(folder: Path, overwrite: bool, protect, fill: Callable[[Path], dict]) -> dict:
    """Publish a new index folder whose first generation `fill(dir)` writes: assembled beside
    `folder` and renamed into place whole (`outputs.staged_dir`). Returns index.json."""

    with staged_dir(folder, overwrite, KIND, protect) as staged:
        name = generation_name(1)
        (staged / name).mkdir()
        info = _fill_generation(staged / name, fill)
        return _write_info(staged, info, name)


def publish_generation(folder: Path, fill: Callable[[Path], dict]) -> dict:
    """Add a generation whose data files `fill(dir)` writes (it returns index.json's other fields)
    to the index folder `folder` (which exists and holds an index, or nothing), then replace
    index.json to name it; the caller holds the folder's lock. The previous generation stays for
    the readers still on it; older ones, and what killed writers left, are removed. Returns
    index.json."""

    before = named_now(folder)
    taken = [int(m[1]) for m in map(GENERATION_NAME.fullmatch, os.listdir(folder)) if m]  # folders or not
    number = 1 + max([before or 0, *taken])
    name = generation_name(number)
    staged = staging_dir(folder / name)  # .gen-N.tmp-PID-*: a leftover the next write sweeps
    try:
        info = _fill_generation(staged, fill)
        staged.rename(folder / name)
        _fsync(folder)
    except BaseException:
        shutil.rmtree(staged, ignore_errors=True)
        raise
    try:
        _list_info(folder / MANIFEST)
        record = _write_info(folder, info, name)
    except BaseException as err:
        if named_now(folder) != number:  # index.json still names the old generation: the new one goes
            shutil.rmtree(folder / name, ignore_errors=True)
        if isinstance(err, OSError):
            raise cannot_write(err, folder / INFO) from None
        raise
    _remove_old(folder, keep={number, before})
    return record


def _list_info(manifest: Path) -> None:
    """The folder's manifest lists index.json (an empty folder's has no manifest yet), so that
    `--overwrite` counts it as bertkit's."""

    try:
        record = json.loads(manifest.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        record = None
    if not isinstance(record, dict) or not isinstance(record.get("files"), list):
        record = {"written_by": "bertkit", "version": __version__, "kind": KIND, "files": []}
    if INFO not in record["files"]:
        record["files"] = sorted({*map(str, record["files"]), INFO})
        write_json(manifest, record)


def _remove_old(folder: Path, keep: set) -> None:
    """Generations other than `keep` (a flat index's data files once generation 0 is not kept),
    and generations that killed writers were assembling."""

    for number, path in _generations(folder).items():
        if number not in keep:
            shutil.rmtree(path, ignore_errors=True)
    if 0 not in keep:
        for name in (TEXTS, ann.FILE):
            with contextlib.suppress(FileNotFoundError):
                (folder / name).unlink()
    for item in folder.glob(".gen-*.tmp-*"):
        if is_leftover(item.name):
            shutil.rmtree(item, ignore_errors=True)

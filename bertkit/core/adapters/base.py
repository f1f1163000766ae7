"""The base model of an adapter bundle: its name as the run gave it, where it was, and a content
hash of its weight files, so an adapter is only ever put on the weights it was trained on."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from bertkit.core import models
from bertkit.core.errors import BertkitError

ADAPTER_FILE = "adapter_config.json"  # peft's: an adapter bundle holds it beside bertkit.json
_hashes: dict[tuple, str] = {}  # (path, size, mtime) of each weight file -> hash, within one process


def model_folder(source: str, revision: str | None = None) -> Path | None:
    """The local folder holding `source`'s files: itself, or a Hub id's snapshot in the cache (of
    `revision`, a branch, tag or commit; the default branch when None)."""
    path = Path(source).expanduser()
    if path.is_dir():
        return path
    try:
        from huggingface_hub import try_to_load_from_cache

        found = try_to_load_from_cache(source, "config.json", revision=revision)
    except Exception:  # a malformed id is simply not in the cache
        return None
    return Path(found).parent if isinstance(found, str) else None


def weight_files(folder: Path) -> list[Path]:
    """The weight files of a model folder: its safetensors files, else its PyTorch .bin files."""
    found = sorted(folder.glob("*.safetensors")) or sorted(folder.glob("*.bin"))
    return [p for p in found if p.name != "training_args.bin"]


def weights_hash(source: str, revision: str | None = None) -> str:
    """sha256 over the names and bytes of `source`'s weight files (computed once per process)."""
    folder = model_folder(source, revision)
    files = weight_files(folder) if folder is not None else []
    if not files:
        raise BertkitError(f"{source}: no weight files (model.safetensors or pytorch_model.bin) to hash")
    key = tuple((str(p.resolve()), p.stat().st_size, p.stat().st_mtime_ns) for p in files)
    if key not in _hashes:
        digest = hashlib.sha256()
        for path in files:
            digest.update(path.name.encode() + b"\0")
            with open(path, "rb") as handle:
                for block in iter(lambda: handle.read(1 << 20), b""):
                    digest.update(block)
        _hashes[key] = "sha256:" + digest.hexdigest()
    return _hashes[key]


def is_adapter_bundle(path) -> bool:
    """Whether `path` is a bundle holding an adapter (and not the whole model)."""
    return adapter_of(Path(path)) is not None  # peft's files are checked when it loads (loading.py)


def adapter_of(folder: Path) -> dict | None:
    """The `adapter` record of a bundle's bertkit.json, or None."""
    try:
        info = json.loads((Path(folder) / "bertkit.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    found = info.get("adapter") if isinstance(info, dict) else None
    return found if isinstance(found, dict) else None


def refuse_adapter_bundle(name: str, source: str) -> None:
    """Training starts from a whole model: an adapter bundle as `model.name` is refused, saying how
    to make it one."""
    if is_adapter_bundle(source):
        raise BertkitError(
            f"model.name: {name} is an adapter bundle, not a whole model. To train on it, merge it first: "
            f"bertkit adapter merge -m {name} -o DIR, then give DIR"
        )


def describe_base(name: str, source: str, revision: str | None = None) -> dict:
    """What an adapter bundle records of its base: the name the run gave (`model.name`), the
    folder it was read from when local, the Hub commit it was read at (`model.revision` pinned, or
    the default branch's commit then), and the hash of those weights."""
    refuse_adapter_bundle(name, source)
    folder = Path(source).expanduser()
    local = folder.is_dir()
    snapshot = None if local else model_folder(source, revision)
    return {
        "base_model": name,
        "base_path": str(folder.resolve()) if local else None,
        "base_revision": snapshot.name if snapshot is not None else revision,  # a snapshot folder is its commit
        "base_hash": weights_hash(source, revision),
    }


def find_base(bundle: Path, adapter: dict) -> str:
    """The base an adapter bundle was trained on, found by its name (or the folder it was read
    from) and checked by its hash; a clear error naming both when it is not here or not the same."""

    name, recorded = adapter.get("base_model"), adapter.get("base_hash")
    if not isinstance(name, str) or not isinstance(recorded, str):
        raise BertkitError(f"{bundle}/bertkit.json: its adapter record names no base model and hash; train it again")
    revision = adapter.get("base_revision") if isinstance(adapter.get("base_revision"), str) else None
    candidates = [c for c in (adapter.get("base_path"), name) if isinstance(c, str)]
    tried, different = [], []
    for candidate in dict.fromkeys(candidates):  # the first that holds the same weights is the base
        at = None if Path(candidate).expanduser().is_dir() else revision  # a Hub id at the recorded commit
        try:
            source = models.resolve(candidate, at)
        except BertkitError as err:
            tried.append(str(err))
            continue
        folder = model_folder(source, at)
        if folder is None or not weight_files(folder):
            tried.append(f"{candidate}{f' at {at}' if at else ''} has no weight files here")
            continue
        found = weights_hash(source, at)
        if found == recorded:
            return str(folder) if at else source  # a Hub id: the snapshot of that commit, loaded as a folder
        different.append((candidate, found))
    if different:
        candidate, found = different[0]
        raise BertkitError(
            f"--model {bundle} is an adapter trained on {name}, but the model at {candidate} is a different one "
            f"(its weights hash {found[:19]}..., the adapter's base {recorded[:19]}...). Put the base it was trained "
            "on there, or train the adapter again on this one"
        )
    path = adapter.get("base_path")
    places = name + (f" (or {path})" if isinstance(path, str) and path != name else "")
    raise BertkitError(
        f"--model {bundle} is an adapter of the base model {name}, which is not here ({'; '.join(tried)}). "
        f"Put that model at {places}, or run `bertkit adapter merge` where it is"
    )


def bundle_inputs(path: str) -> list[str]:
    """What writing from the bundle at `path` reads and must never replace: the bundle, and for an
    adapter bundle its base folder too (`adapter merge -o BASE --overwrite` replaced the base every
    adapter of it needs)."""
    adapter = adapter_of(Path(path))
    if adapter is None:
        return [path]
    places = [adapter.get("base_path")] if isinstance(adapter.get("base_path"), str) else []
    try:
        places.append(find_base(Path(path), adapter))
    except BertkitError:
        pass  # no base here: the command says so when it loads the bundle
    return [path, *dict.fromkeys(places)]

"""Tokenized training features kept on disk (datasets' Arrow files), so that a second run with the
same inputs skips `Training.prepare`, and training reads memory-mapped features instead of holding
them in RAM.

An entry's key is a hash of everything `prepare` reads: the raw splits (datasets' own
fingerprint of their content, so the files' text and every reading setting: columns, sampling,
the validation split, HTML stripping), the tokenizer (the bytes of its saved files), the run's
description (`info`: max_length, stride, labels, task settings), the files the task reads besides
(`Training.inputs`, e.g. a distillation teacher: path, size and modification time of each file), and
the code that builds features (bertkit's task and tokenization sources, the transformers and
tokenizers versions). Any change gives another key, so a changed setting rebuilds; nothing is
ever updated in place.

Where: `$BERTKIT_CACHE/features` when the variable is set, else `$XDG_CACHE_HOME/bertkit/features`
(`~/.cache/bertkit/features`). `data.cache: false` turns it off. Entries are folders named
`<task>-<key>`; deleting any of them (or the whole folder) is always safe.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import tempfile
import time
from pathlib import Path

import bertkit
from bertkit.core.caches import cache_root

KEY_FILE = "key.json"  # written last: an entry without it is incomplete and never read


def features_dir() -> Path:
    return cache_root() / "features"


def _hash_files(paths, hasher, contents: bool) -> None:
    """Feed each file under `paths` (files or folders, in sorted order) to `hasher`: its bytes
    (`contents`), else its name, size and modification time (cheap, for large inputs)."""
    for given in paths:
        root = Path(given)
        files = sorted(p for p in root.rglob("*") if p.is_file()) if root.is_dir() else [root]
        for file in files:
            if not file.exists():
                hasher.update(f"missing:{file}".encode())
                continue
            if contents:
                hasher.update(file.name.encode())
                hasher.update(file.read_bytes())
            else:
                st = file.stat()
                hasher.update(f"{file.resolve()}:{st.st_size}:{st.st_mtime_ns}".encode())


# Saved fields that do not change the features: where the tokenizer was loaded from, and the
# truncation / padding that the last call happened to leave set (every call sets its own).
_NEUTRAL = {"tokenizer_config.json": ("name_or_path",), "tokenizer.json": ("truncation", "padding")}


def tokenizer_hash(tokenizer) -> str:
    """A hash of the tokenizer as `save_pretrained` writes it (vocabulary, normalisation,
    special tokens, truncation side, ...), whatever it was loaded from."""
    hasher = hashlib.sha256()
    with tempfile.TemporaryDirectory(prefix="bertkit-tok-") as folder:
        tokenizer.save_pretrained(folder)
        for file in sorted(Path(folder).iterdir()):
            data = file.read_bytes()
            if file.name in _NEUTRAL:
                config = json.loads(data)
                for name in _NEUTRAL[file.name]:
                    config.pop(name, None)
                data = json.dumps(config, sort_keys=True).encode()
            hasher.update(file.name.encode())
            hasher.update(data)
    return hasher.hexdigest()


def _code_hash() -> str:
    """The sources that turn examples into features: a change to them must not reuse old features."""
    import tokenizers
    import transformers

    package = Path(bertkit.__file__).parent
    hasher = hashlib.sha256(f"{bertkit.__version__} {transformers.__version__} {tokenizers.__version__}".encode())
    sources = sorted((package / "tasks").rglob("*.py")) + [package / "tokenization.py"]
    _hash_files(sources, hasher, contents=True)
    return hasher.hexdigest()


def feature_key(raw: dict, tokenizer, info, inputs=()) -> dict:
    """What an entry is keyed by, part by part (saved beside it, to see why two runs differ)."""
    data = {role: split._fingerprint for role, split in sorted(raw.items())}
    extra = hashlib.sha256()
    _hash_files([p for p in inputs if p], extra, contents=False)
    return {
        "data": data,
        "tokenizer": tokenizer_hash(tokenizer),
        "info": json.loads(json.dumps(dict(info), sort_keys=True, default=str)),
        "inputs": extra.hexdigest(),
        "code": _code_hash(),
    }


def key_digest(key: dict) -> str:
    return hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()[:20]


def cached_prepare(build, raw: dict, tokenizer, info, task_name: str, inputs=(), say=print):
    """`build()` (the task's `prepare`) through the cache: the saved features when an entry with
    the same key exists, else built, saved and read back (so both runs train on the same
    memory-mapped Arrow files). Returns (features, path of the entry, whether it was a hit)."""
    import datasets

    key = feature_key(raw, tokenizer, info, inputs)
    entry = features_dir() / f"{task_name}-{key_digest(key)}"
    if (entry / KEY_FILE).is_file():
        with contextlib.suppress(OSError):
            os.utime(entry / KEY_FILE)  # last used: what a clean-up by age goes by
        say(f"tokenized features: read from the cache, {entry} (tokenizing skipped)")
        return datasets.load_from_disk(str(entry / "features")), entry, True
    started = time.perf_counter()
    features = build()
    seconds = time.perf_counter() - started
    record = {**key, "task": task_name, "build_seconds": round(seconds, 2)}
    try:
        _save(datasets.DatasetDict(features), record, entry)
    except OSError as err:  # a cache that cannot be written costs speed, never the run
        say(f"[yellow]note:[/yellow] the feature cache could not be written ({err}); training goes on without it")
        return features, None, False
    say(f"tokenized features: built in {seconds:.1f} s and cached in {entry}")
    return datasets.load_from_disk(str(entry / "features")), entry, False


def _save(features, record: dict, entry: Path) -> None:
    """Write an entry in a staged folder beside it, then rename it into place: a killed run
    leaves a `.`-named folder (removed by the next write a day later), never a half entry."""
    entry.parent.mkdir(parents=True, exist_ok=True)
    _sweep_leftovers(entry.parent)
    staged = Path(tempfile.mkdtemp(prefix=f".{entry.name}-", dir=entry.parent))
    try:
        features.save_to_disk(str(staged / "features"))
        (staged / KEY_FILE).write_text(json.dumps(record, indent=1, sort_keys=True), encoding="utf-8")
        if entry.exists() and not (entry / KEY_FILE).is_file():  # not an entry: a folder left by hand
            shutil.rmtree(entry, ignore_errors=True)
        try:
            staged.rename(entry)
        except OSError:
            if not (entry / KEY_FILE).is_file():
                raise
            # another run (or rank) saved the same entry first: theirs is as good
    finally:
        shutil.rmtree(staged, ignore_errors=True)


def _sweep_leftovers(folder: Path, age: float = 86400.0) -> None:
    """Staged folders of runs killed while writing, more than `age` seconds old."""
    now = time.time()
    for leftover in folder.glob(".*"):
        with contextlib.suppress(OSError):
            if leftover.is_dir() and now - leftover.stat().st_mtime > age:
                shutil.rmtree(leftover, ignore_errors=True)

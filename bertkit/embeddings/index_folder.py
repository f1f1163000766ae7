"""An index folder on disk (`bertkit index`): generations of data files that never change once
written, described by one `index.json` that a writer replaces in one step, so that a reader sees
the old index or the new one, whole, and a writer killed at any moment leaves a usable index.

    idx/
      index.json            what the index is (model, settings, counts, corpora, the checksums of
                            the data files) and "generation": "gen-000003", the folder holding its
                            data files. The only file a writer replaces (written beside it, flushed
                            and renamed over it); a reader reads it once, then reads the data files
                            from the generation it names
      gen-000003/           texts.jsonl, vectors.faiss (and the generation's own manifest)
      gen-000002/           the previous generation, kept for readers that started before the switch
      .bertkit-output.json  the folder's manifest (kind "index")

A generation is assembled as `.gen-N.tmp-PID-*`, flushed and renamed to `gen-N` when whole; only
then is index.json replaced to name it, and only then are generations older than the previous one
removed (`index_publishing`). A reader that finds its generation gone (two writes went by while it read) reads
index.json again and starts over. An index of bertkit's earlier flat layout (format 1: index.json
without "generation", texts.jsonl and vectors.faiss beside it) reads as generation 0, and becomes
this layout (format 2) at its next write.

Every reader checks what it reads: index.json's fields and their types (the generation's name
included: "gen-" and digits, a folder in idx/, never a path elsewhere), each texts.jsonl line (a
JSON string), the counts, the SHA-256 checksums of texts.jsonl and vectors.faiss that index.json
keeps, and that the vectors are keyed by exactly the non-blank lines. Anything else is an error
saying to rebuild the index. The texts are hashed block by block as they are read; the vectors
file is hashed in a thread beside FAISS's reading of it (SHA-256 runs at about 1.8 GB/s a core
here). Indexes of bertkit before checksums are checked without them."""

from __future__ import annotations

import contextlib
import errno
import hashlib
import json
import os
import stat
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from bertkit.core.errors import BertkitError
from bertkit.embeddings import ann
from bertkit.embeddings.index_info import FLAT, GENERATION_NAME, REBUILD, check_info, damaged

INFO, TEXTS = "index.json", "texts.jsonl"
KIND = "index"  # the kind in the folder's manifest: --overwrite replaces an index only with an index
GENERATION_KIND = "index generation"
READ_ATTEMPTS = 5  # a reader starts over at most this often when writers keep replacing its generation


@dataclass(frozen=True)
class Generation:
    folder: Path  # the index folder as given
    root: Path  # where this generation's data files are
    number: int  # 0: the flat layout of bertkit before generations (the files in the folder itself)

    def __getitem__(self, name: str) -> Path:
        return self.root / name


@dataclass
class Loaded:
    """One generation of an index, read whole and checked."""

    generation: Generation
    info: dict  # index.json as read
    texts: list[str] | None
    vectors: object | None  # the FAISS index


class _Gone(Exception):
    """A file of the generation being read is not there: a writer may have removed it."""


def generation_name(number: int) -> str:
    return f"gen-{number:06d}"


# ---------------------------------------------------------------- index.json: what the index is and where


def current(folder) -> tuple[Generation, dict]:
    """The index's index.json, read once and checked, and the generation it names (generation 0:
    the data files beside it, in an index of the flat layout)."""
    root = Path(folder)
    if not root.is_dir():
        what = "is a file" if root.exists() else "does not exist"
        raise BertkitError(f"--index {folder} {what}; give a folder made by `bertkit index build`")
    path = root / INFO
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW)  # a FIFO put there must not hang it
    except FileNotFoundError:
        raise BertkitError(
            f"--index {folder} holds no {INFO}: it is not an index made by `bertkit index build`"
        ) from None
    except OSError as err:
        if err.errno == errno.ELOOP:
            raise damaged(path, "is a symbolic link, not a file bertkit wrote") from None
        raise BertkitError(f"{path} cannot be read ({err.strerror or err})") from None
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise damaged(path, "is not a file")
    with open(fd, "rb") as handle:
        raw = handle.read()
    try:
        info = json.loads(raw)
    except ValueError as err:
        raise damaged(path, f"is not JSON ({err})") from None
    check_info(path, info)
    return _named(root, path, info), info


def _named(root: Path, path: Path, info: dict) -> Generation:
    """The generation that index.json (checked) names: a folder of the index itself, not a link."""
    if info["format"] == FLAT:
        return Generation(root, root, 0)
    name = info["generation"]
    try:
        mode = os.lstat(root / name).st_mode
    except FileNotFoundError:
        mode = None  # removed by writers since index.json was read, or never there: `load` tells which
    except OSError as err:
        raise damaged(path, f"'generation' names {name}, which cannot be read ({err.strerror or err})") from None
    if mode is not None and stat.S_ISLNK(mode):
        raise damaged(path, f"'generation' names {name}, a symbolic link, not a generation folder bertkit wrote")
    if mode is not None and not stat.S_ISDIR(mode):
        raise damaged(path, f"'generation' names {name}, which is not a folder")
    return Generation(root, root / name, int(GENERATION_NAME.fullmatch(name)[1]))


def named_now(folder: Path) -> int | None:
    """The generation index.json names now, None where it cannot tell."""
    try:
        return current(folder)[0].number
    except BertkitError:
        return None


# ---------------------------------------------------------------- reading, checked


def _open_data(generation: Generation, name: str):
    """A data file of the generation, opened for reading: one that is not there is `_Gone` (a
    writer may have removed it); in a generation folder, a symbolic link is not followed (bertkit
    never writes one: a generation's files are its own)."""
    path = generation[name]
    flags = os.O_RDONLY | os.O_NONBLOCK | (os.O_NOFOLLOW if generation.number else 0)  # NONBLOCK: a FIFO
    try:
        fd = os.open(path, flags)
    except FileNotFoundError:
        raise _Gone(name) from None
    except OSError as err:
        if err.errno == errno.ELOOP and generation.number:
            raise damaged(path, "is a symbolic link, not a file bertkit wrote") from None
        raise damaged(path, f"cannot be read ({err.strerror or err})") from None
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise damaged(path, "is not a file")
    return open(fd, "rb")  # noqa: SIM115 (the callers close it)


def read_texts(generation: Generation, info: dict) -> list[str]:
    """texts.jsonl, each line checked to be one JSON string, their count and their checksum checked.
    Read in blocks of 4 MiB, each hashed and decoded whole (per-line hashing and decoding cost
    twice the time of the parsing itself)."""
    path = generation[TEXTS]
    digest = hashlib.sha256()
    texts: list[str] = []
    tail = b""
    with _open_data(generation, TEXTS) as handle:
        for block in iter(lambda: handle.read(1 << 22), b""):
            digest.update(block)
            block = tail + block
            cut = block.rfind(b"\n") + 1
            tail = block[cut:]
            _parse_lines(path, block[:cut], texts)
    if tail:
        _parse_lines(path, tail + b"\n", texts)
        raise damaged(f"{path}:{len(texts)}", "is cut short (no line break at its end)")
    if len(texts) != info["lines"]:
        raise damaged(path, f"holds {len(texts):,} lines, not the {info['lines']:,} its {INFO} counts")
    stored = info.get("texts_sha256")
    if stored is not None and digest.hexdigest() != stored:
        raise damaged(
            path, f"its lines are not the ones the index was built with (its checksum differs from {INFO}'s): "
            "edited, reordered or replaced by hand"
        )  # fmt: skip
    return texts


def _parse_lines(path: Path, block: bytes, texts: list[str]) -> None:
    """Append the texts of `block` (whole lines) to `texts`, each checked."""
    try:
        lines = block.decode("utf-8").split("\n")[:-1]
    except UnicodeDecodeError as err:
        number = len(texts) + block.count(b"\n", 0, err.start) + 1
        raise damaged(f"{path}:{number}", "is not UTF-8 text") from None
    loads = json.loads
    for line in lines:
        try:
            text = loads(line)
        except ValueError:
            raise damaged(f"{path}:{len(texts) + 1}", "is not a JSON string") from None
        if not isinstance(text, str):
            raise damaged(f"{path}:{len(texts) + 1}", f"holds {line.strip()[:40]}, not a JSON string (a text)")
        texts.append(text)


def read_vectors(generation: Generation, info: dict, texts: list[str] | None):
    """The FAISS index, checked against index.json (width, count, checksum) and, given the texts,
    keyed by exactly their non-blank lines."""
    path = generation[ann.FILE]
    stored = info.get("vectors_sha256")
    with contextlib.ExitStack() as files:
        handle = files.enter_context(_open_data(generation, ann.FILE))
        # the same file again, to hash beside FAISS's reading (hashing releases the GIL): a
        # generation never changes, so both read the same bytes
        again = files.enter_context(_open_data(generation, ann.FILE)) if stored is not None else None
        with ThreadPoolExecutor(1) as pool:
            hashed = pool.submit(_sha256_of, again) if again is not None else None
            vectors = ann.read(handle, path, info["dimension"])
            checksum = hashed.result() if hashed is not None else None
    if checksum != stored:
        raise damaged(path, f"it is not the file the index was built with (its checksum differs from {INFO}'s)")
    if ann.kind_of(vectors) != info["ann"]["kind"]:
        raise damaged(
            path,
            f"it holds an index of kind {ann.kind_of(vectors)}, where {INFO}'s 'ann.kind' says {info['ann']['kind']}",
        )
    if vectors.ntotal != info["count"]:
        raise damaged(path, f"holds {vectors.ntotal:,} vectors, not the {info['count']:,} its {INFO} counts")
    if texts is not None:
        keys = np.sort(ann.keys(vectors))
        filled = np.asarray([i for i, t in enumerate(texts) if t.strip()], dtype=np.int64)
        if len(filled) != len(keys) or not np.array_equal(keys, filled):
            raise damaged(
                path, f"its vectors are not keyed by the {len(filled):,} non-blank lines of {TEXTS} "
                "(the texts were changed by hand)"
            )  # fmt: skip
    return vectors


def load(folder, texts: bool = True, vectors: bool = True) -> Loaded:
    """The index at `folder`: index.json read once and checked, then the data files (what is asked
    of them) read whole from the generation it names, and checked. A generation that a writer
    removes while it is read is left for the one index.json names now; a file missing while
    index.json still names its generation is damage."""
    for _ in range(READ_ATTEMPTS):
        generation, info = current(folder)
        try:
            lines = read_texts(generation, info) if texts else None
            index = read_vectors(generation, info, lines) if vectors else None
            return Loaded(generation, info, lines, index)
        except _Gone as gone:
            if named_now(Path(folder)) == generation.number:
                raise _missing(generation, str(gone)) from None
    raise BertkitError(f"--index {folder} was replaced {READ_ATTEMPTS} times while it was read; try again")


def _missing(generation: Generation, name: str) -> BertkitError:
    if generation.number and not generation.root.is_dir():
        return damaged(
            generation.folder / INFO, f"'generation' names {generation.root.name}, a folder "
            f"{generation.folder} does not hold"
        )  # fmt: skip
    where = f"{generation.root.name}/" if generation.number else ""
    return BertkitError(f"--index {generation.folder} lacks {where}{name}; the index is damaged: {REBUILD}")


# ---------------------------------------------------------------- checksums


def file_sha256(path: Path) -> str:
    with open(path, "rb") as handle:
        return _sha256_of(handle)


def _sha256_of(handle) -> str:
    digest = hashlib.sha256()
    for block in iter(lambda: handle.read(1 << 22), b""):
        digest.update(block)
    return digest.hexdigest()

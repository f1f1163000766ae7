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
import math
import os
import re
import stat
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from bertkit.embeddings import ann
from bertkit.embeddings.pooling import POOLINGS
from bertkit.errors import BertkitError

INFO, TEXTS = "index.json", "texts.jsonl"
FLAT, FORMAT = 1, 2  # index.json's layouts: 1 the data files beside it, 2 in the generation it names
KIND = "index"  # the kind in the folder's manifest: --overwrite replaces an index only with an index
GENERATION_KIND = "index generation"
GENERATION_NAME = re.compile(r"gen-([0-9]{6,18})")  # ASCII digits, few enough to be a number
REBUILD = "rebuild the index (`bertkit index build ... --overwrite`)"
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


def damaged(where, what: str) -> BertkitError:
    return BertkitError(f"{where}: {what}; the index is damaged: {REBUILD}")


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


def _field(
    path, record: dict, key: str, kind, where: str = "", optional: bool = False, least: int | None = None,
    most: int | None = None,
):  # fmt: skip
    """record[key] checked to be of `kind` (bool is not a number), from `least` to `most` if a number."""
    label = repr(f"{where}{key}")
    if key not in record:
        if optional:
            return None
        raise damaged(path, f"lacks {label}")
    value = record[key]
    wrong = not isinstance(value, kind) or (isinstance(value, bool) and bool not in kind)
    if optional and value is None:
        return None
    if wrong:
        names = {
            int: "a whole number",
            float: "a number",
            str: "text",
            dict: "an object",
            list: "a list",
            bool: "true or false",
        }
        wanted = " or ".join(names.get(k, k.__name__) for k in kind)
        raise damaged(path, f"{label} is {json.dumps(value)}, not {wanted}")
    if least is not None and value < least:
        raise damaged(path, f"{label} is {value}, below {least}")
    if most is not None and value > most:
        raise damaged(path, f"{label} is {value}, above {most:,}, the most bertkit uses")
    return value


def _finite(path, value, where: str = "") -> None:
    """Every number in index.json finite: NaN and Infinity (which Python's JSON reader accepts, as it
    reads 1e999 as infinity) are not JSON, and bertkit never writes them."""
    if isinstance(value, float) and not math.isfinite(value):
        raise damaged(path, f"{where or 'it'!r} is {value}, not a finite number")
    if isinstance(value, dict):
        for key, item in value.items():
            _finite(path, item, f"{where}.{key}" if where else str(key))
    elif isinstance(value, list):
        for number, item in enumerate(value):
            _finite(path, item, f"{where}[{number}]")


MOST_TOKENS = 1 << 20  # settings.max_length: the model's own limit is checked as it loads
MOST_DIMENSION = 1 << 20


def check_info(path, info) -> None:
    """index.json's fields, their types and their sums: what every reader relies on."""
    if not isinstance(info, dict):
        raise damaged(path, "is not a JSON object")
    _finite(path, info)
    fmt = _field(path, info, "format", (int,))
    if fmt not in (FLAT, FORMAT):
        raise BertkitError(
            f"{path}: index format {fmt!r}, which this bertkit does not read (it reads {FLAT} and {FORMAT}); "
            "build the index again with this version"
        )
    if fmt == FLAT:
        if "generation" in info:
            raise damaged(path, f"holds 'generation', which an index of format {FLAT} (its files beside it) has not")
    else:
        name = _field(path, info, "generation", (str,))
        match = GENERATION_NAME.fullmatch(name)
        if not match or int(match[1]) < 1:
            raise damaged(
                path, f"'generation' is {json.dumps(name)}, not the name of a generation folder beside it "
                "(gen-000001, gen-000002, ...)"
            )  # fmt: skip
    _field(path, info, "model", (str,))
    settings = _field(path, info, "settings", (dict,))
    if _field(path, settings, "pooling", (str,), "settings.") not in POOLINGS:
        raise damaged(path, f"'settings.pooling' is {settings['pooling']!r}, not one of {', '.join(POOLINGS)}")
    _field(path, settings, "normalize", (bool,), "settings.")
    _field(path, settings, "max_length", (int,), "settings.", least=1, most=MOST_TOKENS)
    _field(path, info, "identity", (str,), optional=True)
    _field(path, info, "dimension", (int,), least=1, most=MOST_DIMENSION)
    count = _field(path, info, "count", (int,), least=0)
    lines = _field(path, info, "lines", (int,), least=count)
    _check_ann(path, _field(path, info, "ann", (dict,)))
    corpora = _field(path, info, "corpora", (list,))
    first = texts = 0
    for number, corpus in enumerate(corpora):
        where = f"corpora[{number}]."
        if not isinstance(corpus, dict):
            raise damaged(path, f"corpora[{number}] is {json.dumps(corpus)}, not an object")
        _field(path, corpus, "path", (str,), where)
        if _field(path, corpus, "first", (int,), where) != first:
            raise damaged(path, f"'{where}first' is {corpus['first']}, where the corpora before it end at {first}")
        first += _field(path, corpus, "lines", (int,), where, least=0)
        texts += _field(path, corpus, "texts", (int,), where, least=0)
    if (first, texts) != (lines, count):
        raise damaged(path, f"its corpora hold {first} lines and {texts} texts, where it counts {lines} and {count}")
    _field(path, info, "text_column", (str,), optional=True)
    if _field(path, info, "metric", (str,), optional=True) not in (None, "cosine"):
        raise damaged(path, f"'metric' is {json.dumps(info['metric'])}, not cosine, the only metric bertkit writes")
    for key in ("texts_sha256", "vectors_sha256"):  # absent only in the flat layout, of bertkit before checksums
        if _field(path, info, key, (str,), optional=fmt == FLAT) is not None and not re.fullmatch(
            r"[0-9a-f]{64}", info[key]
        ):
            raise damaged(path, f"{key!r} is not a SHA-256 checksum")


def _check_ann(path, described: dict) -> None:
    """index.json's "ann": a kind bertkit writes and the settings of that kind, each in its range
    (`ann.LIMITS`: a value past it would overflow FAISS's integers or exhaust the memory)."""
    kind = _field(path, described, "kind", (str,), "ann.")
    if kind not in ann.KIND_NAMES:
        raise damaged(path, f"'ann.kind' is {json.dumps(kind)}, not one of {', '.join(ann.KIND_NAMES)}")
    ivf = ann.is_ivf(described)
    for key in ("lists", "probes") if ivf else ("m", "ef_construction", "ef_search"):
        optional = key != ("probes" if ivf else "ef_search")  # the breadth a search uses; the rest are a record
        _field(path, described, key, (int,), "ann.", optional=optional, least=1, most=ann.LIMITS[key])
    if kind != "HNSW":
        _field(path, described, "rescore", (int, float), "ann.", optional=True, least=1, most=1000)
    recall = _field(path, described, "check_recall", (int, float), "ann.", optional=True, least=0)
    if recall is not None and recall > 1:
        raise damaged(path, f"'ann.check_recall' is {recall}, above 1")
    for key in ("library", "version"):
        _field(path, described, key, (str,), "ann.", optional=True)
    _field(path, described, "quantized", (bool,), "ann.", optional=True)


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

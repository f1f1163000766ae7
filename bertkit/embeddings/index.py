"""`bertkit index build`, `bertkit index add` and `bertkit search --index`: an approximate
nearest-neighbour index (an HNSW graph or an IVF index, `ann.py`) of a corpus's sentence vectors,
kept in a folder with the corpus texts and everything needed to encode queries as the corpus was
encoded (the model's path and its pooling, normalisation and length), so a search needs only the
folder.

The folder (`index_folder.py`; `--overwrite` only over an index bertkit wrote) holds
  index.json    what the index is: model, encoding settings, library and graph parameters, the
                corpora in the order they were added with the position of their first line, the
                checksums of the two files below, and the generation folder (`gen-N/`) they are in.
                It is replaced in one step to name a new generation, so readers see an index whole
                and a killed writer leaves a usable one
and in the generation folder:
  texts.jsonl   every corpus line, blank ones included, one JSON string a line: a hit's `index` is
                its line here, so the position in the corpus and, after `index add`, in the corpora
                one after the other
  vectors.faiss the index of the unit vectors of the non-blank lines, keyed by that position
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable, Iterator
from dataclasses import asdict
from pathlib import Path

import numpy as np

from bertkit.core.data.corpus import read_lines
from bertkit.core.errors import BertkitError
from bertkit.core.outputs import (
    OutputLock,
    RecordWriter,
    atomic_text,
    cannot_write,
    check_output_dir,
    check_output_file,
    check_writable,
    writing_failed,
)
from bertkit.core.pooling import unit_vectors
from bertkit.core.progress import console, status
from bertkit.embeddings import ann, index_folder, index_publishing
from bertkit.embeddings.ann_params import CHECK_QUERIES, CHECK_RECALL, Params
from bertkit.embeddings.index_folder import INFO, KIND, TEXTS  # noqa: F401 (the names of the files)
from bertkit.embeddings.index_info import FORMAT, REBUILD
from bertkit.embeddings.search import asked_queries, hit_records
from bertkit.tasks.embed.encoder import load_encoder

# ---------------------------------------------------------------- reading an index


def read_index(folder: str) -> dict:
    """index.json of the index at `folder`, checked: a missing or foreign folder, a damaged file or a
    missing part is an error naming it."""

    return index_folder.load(folder, texts=False, vectors=False).info


def index_encoder(info: dict, device: str | None, trust_remote_code: bool, runtime: str | None):
    """The encoder the index was built with, set up as it was; a model that has changed since
    (other weights, other settings, another width) would put queries in another space, so it is
    an error rather than quietly worse hits."""

    stored, where = info["settings"], f"{INFO}'s 'settings.max_length'"
    try:
        encoder = load_encoder(
            info["model"], stored["pooling"], stored["normalize"], stored["max_length"], device, trust_remote_code,
            runtime, length_from=where,
        )  # fmt: skip
    except BertkitError as err:  # a length the model cannot read: no option fixes it, a rebuild does
        if str(err).startswith(where):
            raise BertkitError(f"{err}: {REBUILD}") from None
        raise
    if encoder.dimension != info["dimension"]:
        raise BertkitError(
            f"{info['model']} now gives vectors of {encoder.dimension} dimensions, the index holds "
            f"{info['dimension']}: the model was replaced since the index was built. Build the index again."
        )
    changed = {k: v for k, v in _settings(encoder).items() if stored.get(k, v) != v}
    if changed or info.get("identity") is not None and not _same_weights(info, encoder):
        what = ", ".join(f"{k} {stored[k]} -> {v}" for k, v in changed.items()) or "its weight files"
        raise BertkitError(
            f"{info['model']} changed since the index was built ({what}): its query vectors would not match "
            "the corpus vectors. Build the index again, or restore the model."
        )
    return encoder


def _same_weights(info: dict, encoder) -> bool:
    """Whether the stored identity and the encoder's agree on everything after the model's path.
    The model is always loaded from the index's absolute `model`, so the path adds nothing to the
    check, and an index built by an older bertkit from a relative path (`-m ./model`) stored it as
    given."""
    stored, now = info["identity"].split("|", 1), encoder.identity().split("|", 1)
    return len(stored) == len(now) == 2 and stored[1] == now[1]


def _settings(encoder) -> dict:
    settings = asdict(encoder.settings)
    settings.pop("origin", None)
    return settings


# ---------------------------------------------------------------- building and adding


def _corpus_texts(corpus: str, text_column: str) -> list[str]:

    texts = list(read_lines(corpus, text_column, keep_blank=True, option="--text-column"))
    if not any(t.strip() for t in texts):
        raise BertkitError(f"{corpus}: the corpus has no text")
    return texts


def _embed(encoder, texts: list[str], first: int, batch_size: int) -> tuple[np.ndarray, np.ndarray]:
    """(keys, unit vectors) of the non-blank texts; a key is the text's position counted from `first`."""

    filled = [i for i, t in enumerate(texts) if t.strip()]
    with status(f"embedding {len(filled):,} corpus texts"):
        vectors = unit_vectors(encoder, [texts[i] for i in filled], batch_size)
    encoder.report_truncation()
    return np.asarray(filled, dtype=np.uint64) + np.uint64(first), vectors


def _writer(info: dict, index, old, texts: list[str]) -> Callable[[Path], dict]:
    """What writes a generation's data files: vectors.faiss and texts.jsonl (the lines of `old`, a
    generation that was loaded and checked, then `texts`); it returns `info` with both files'
    checksums, which the publisher writes as index.json naming the generation."""

    def fill(folder: Path) -> dict:

        ann.save(index, folder / ann.FILE)
        digest = hashlib.sha256()
        with open(folder / TEXTS, "wb") as out:
            if old is not None:  # a generation never changes, and the lock keeps others from replacing it
                with open(old.generation[TEXTS], "rb") as before:
                    for block in iter(lambda: before.read(1 << 20), b""):
                        digest.update(block)
                        out.write(block)
            for text in texts:
                line = (json.dumps(text, ensure_ascii=False) + "\n").encode("utf-8")
                digest.update(line)
                out.write(line)
        checksums = {"texts_sha256": digest.hexdigest(), "vectors_sha256": index_folder.file_sha256(folder / ann.FILE)}
        return {**info, **checksums}

    return fill


def _corpus_record(corpus: str, first: int, texts: list[str]) -> dict:
    return {
        "path": os.path.abspath(corpus),
        "first": first,
        "lines": len(texts),
        "texts": sum(1 for t in texts if t.strip()),
    }


def build_index(
    load: Callable, model: str, corpus: str, output: str, text_column: str, batch_size: int, overwrite: bool,
    params: Params,
) -> dict:  # fmt: skip
    """Embed `corpus` with the encoder `load()` gives and publish the index at `output`; returns
    index.json. Every check that can fail is made before the model loads; the run holds the
    output's lock throughout, so no `index add` or other build writes it meanwhile."""

    ann.require()
    folder = Path(output)
    _not_a_link("--output", folder, "index build")
    check_output_dir(folder, overwrite, [corpus, model], KIND)
    # a new index is assembled beside its folder, a new generation inside an index already there
    check_writable(folder / INFO if folder.is_dir() and not folder.is_symlink() else folder)
    with OutputLock(Path(output)):
        return _build(load, model, corpus, output, text_column, batch_size, overwrite, params)


def _build(load, model, corpus, output, text_column, batch_size, overwrite, params) -> dict:

    check_output_dir(Path(output), overwrite, [corpus, model], KIND)  # as it is now that the lock is held
    texts = _corpus_texts(corpus, text_column)
    count = sum(1 for t in texts if t.strip())
    ann.resolve(params, None, count)  # what does not need the model's width is refused before it loads
    encoder = load()
    asked, params = params, ann.resolve(params, encoder.dimension, count)
    keys, vectors = _embed(encoder, texts, 0, batch_size)
    index = ann.new(encoder.dimension, params)
    ann.add(index, keys, vectors)
    check = None
    if params.kind == "ivf":
        check = ann.check_recall(index, keys, vectors, params.probes)
        if check < CHECK_RECALL:
            index, params = _crowded(asked, params, check, index, encoder.dimension, count, keys, vectors)
    info = {
        "format": FORMAT,
        "model": os.path.abspath(model) if Path(model).exists() else model,
        "settings": _settings(encoder),
        "identity": encoder.identity(),
        "dimension": encoder.dimension,
        "metric": "cosine",
        "count": len(keys),
        "lines": len(texts),
        "ann": {**ann.describe(params), **({"check_recall": round(check, 4)} if check is not None else {})},
        "corpora": [_corpus_record(corpus, 0, texts)],
        "text_column": text_column,
    }
    return _publish(Path(output), overwrite, [corpus, model], _writer(info, index, None, texts))


def _publish(folder: Path, overwrite: bool, protect: list, fill) -> dict:
    """A new folder is renamed into place whole; an index already there (or an empty folder) gets
    a new generation, which readers switch to in one step (index.json replaced to name it).
    Returns index.json."""

    if not folder.exists() or folder.is_symlink():
        return index_publishing.publish_new(folder, overwrite, protect, fill)
    try:
        return index_publishing.publish_generation(folder, fill)
    except Exception as err:  # a full disk, as the OS or a library (FAISS) reports it: one clear error
        failed = writing_failed(err, folder, "The index is as it was.")
        if failed is not None:
            raise failed from None
        if isinstance(err, OSError):
            raise cannot_write(err, folder) from None
        raise


def _crowded(asked: Params, params: Params, check: float, index, dimension: int, count: int, keys, vectors):
    """An IVF index that failed its recall check: `auto` builds the graph instead; an IVF index
    asked for is kept, with a note of what it found."""
    from dataclasses import replace


    found = (
        f"[yellow]note:[/yellow] the IVF index found {check:.0%} of exact search's top 10 for "
        f"{min(CHECK_QUERIES, count)} of the corpus's own texts (its vectors are crowded together, as an "
        "untuned model's can be)"
    )
    if asked.kind == "ivf":
        console.print(f"{found}; --kind hnsw builds a graph, which copes better with such vectors")
        return index, params
    console.print(f"{found}: building an HNSW graph instead")
    graph = ann.resolve(replace(asked, kind="hnsw"), dimension, count)
    index = ann.new(dimension, graph)
    ann.add(index, keys, vectors)
    return index, graph


def _not_a_link(option: str, path: Path, command: str) -> None:
    """An index is written in its own folder, never through a symbolic link to it: the link and
    the folder to give instead are named, before any work."""
    if path.is_symlink():
        real = path.resolve()
        raise BertkitError(
            f"{option} {path} is a symbolic link to {real}: `{command}` writes only the index folder itself; "
            f"give {option} {real}"
        )


def _writable(folder: str) -> None:
    """What `index add` needs to write the index at `folder`, checked before the model loads: the
    folder itself, not a symbolic link to it (bertkit replaces what it writes in place, and never
    through a link: give the folder it points to), and one this user may write in."""

    path = Path(folder)
    _not_a_link("--index", path, "index add")
    if path.is_dir():
        check_writable(path / INFO)  # where the new generation is assembled


def add_to_index(
    folder: str, corpus: str, text_column: str, batch_size: int, device, trust_remote_code: bool, runtime
) -> dict:
    """Append `corpus` to the index at `folder`: its lines are numbered on from the last line of
    the corpora already there. The index is written as a new generation beside the old one and
    index.json replaced to name it, so a failure or a kill leaves the old one as it was and a search running
    meanwhile reads one or the other; one writer at a time holds the folder's lock."""

    ann.require()
    _writable(folder)
    read_index(folder)
    texts = _corpus_texts(corpus, text_column)
    with OutputLock(Path(folder)):
        old = index_folder.load(folder)  # as it is now that no other writer can change it, checked whole
        info = old.info
        encoder = index_encoder(info, device, trust_remote_code, runtime)
        keys, vectors = _embed(encoder, texts, info["lines"], batch_size)
        ann.add(old.vectors, keys, vectors)
        info = {
            **info,
            "count": info["count"] + len(keys),
            "lines": info["lines"] + len(texts),
            "corpora": [*info["corpora"], _corpus_record(corpus, info["lines"], texts)],
        }
        return _publish(Path(folder), True, [corpus], _writer(info, old.vectors, old, texts))


# ---------------------------------------------------------------- searching


def _breadth(folder: str, described: dict, breadths: dict) -> int | None:
    """The breadth option given for this index's kind (None: the index's own); the other kind's is refused."""
    ivf = ann.is_ivf(described)
    right, wrong = ("--probes", "--ef-search") if ivf else ("--ef-search", "--probes")
    if breadths.get(wrong) is not None:
        kind = "an IVF index (lists of codes, no graph)" if ivf else "a graph (HNSW)"
        raise BertkitError(f"--index {folder} is {kind}: {wrong} does not apply; its search breadth is {right}")
    return breadths.get(right)


def search_index(
    folder: str, queries: list[str], top_k: int, batch_size: int, device, trust_remote_code: bool, runtime,
    breadth: int | None = None,
) -> Iterator[dict]:  # fmt: skip
    """The same records as exact search (`embeddings.search.search`), from the index; `breadth`
    overrides the index's own search breadth (efSearch of a graph, probes of an IVF index)."""

    ann.require()
    loaded = index_folder.load(folder)
    yield from _search(loaded, queries, top_k, batch_size, device, trust_remote_code, runtime, breadth)


def _search(loaded, queries, top_k, batch_size, device, trust_remote_code, runtime, breadth) -> Iterator[dict]:
    """Search one generation, read whole (`index_folder.load`): its texts and vectors belong together."""

    info = loaded.info
    encoder = index_encoder(info, device, trust_remote_code, runtime)
    asked = unit_vectors(encoder, queries, batch_size)
    filled = [i for i, q in enumerate(queries) if q.strip()]
    keys = np.zeros((len(queries), 0), dtype=np.int64)
    scores = np.zeros((len(queries), 0))  # float64: the cosines as every command reports them
    if filled:
        found, values = ann.search(
            loaded.vectors, asked[filled], min(top_k, info["count"]), breadth or ann.default_breadth(info["ann"])
        )
        keys = np.zeros((len(queries), found.shape[1]), dtype=np.int64)
        scores = np.zeros((len(queries), found.shape[1]))
        keys[filled], scores[filled] = found, values
    yield from hit_records(queries, loaded.texts, keys, scores)
    encoder.report_truncation()


def search_index_file(
    folder: str, query: list[str], queries: str | None, output: str | None, top_k: int, text_column: str,
    batch_size: int, device, trust_remote_code: bool, runtime, breadths: dict | None = None, rerank=None,
) -> None:  # fmt: skip
    """`bertkit search --index`: the hits of each query as JSON lines, written as exact search writes them;
    `breadths` the search-breadth options given ({"--ef-search": N or None, "--probes": N or None}), of
    which only the index's kind's may be set; `rerank` (a `bertkit.embeddings.rerank.Reranker`)
    re-orders each query's top candidates."""

    ann.require()
    _breadth(folder, read_index(folder)["ann"], breadths or {})  # a wrong option fails before the corpus is read
    check_output_file(output, queries, folder)
    asked = asked_queries(query, queries, text_column)
    loaded = index_folder.load(folder)  # one generation, whole: what was checked above may since be replaced
    breadth = _breadth(folder, loaded.info["ann"], breadths or {})
    with atomic_text(output) as handle, RecordWriter(handle, "jsonl") as writer:
        depth = rerank.depth(top_k) if rerank else top_k
        records = _search(loaded, asked, depth, batch_size, device, trust_remote_code, runtime, breadth)
        for record in rerank.apply(records, top_k) if rerank else records:
            writer.write(record)

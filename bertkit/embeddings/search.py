"""`bertkit similarity` and `bertkit search`: cosine similarity of text pairs or of every pair in
a small list (with an optional heatmap), and exact nearest-neighbour search of queries in a
corpus whose embeddings are cached, keyed by the corpus content and the model."""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from pathlib import Path

import numpy as np

from bertkit.core.adapters.base import bundle_inputs
from bertkit.core.caches import cache_root
from bertkit.core.data.corpus import corpus_files, read_lines
from bertkit.core.errors import BertkitError
from bertkit.core.outputs import RecordWriter, atomic_path, atomic_text, check_cache_dir, check_output_file
from bertkit.core.pooling import cosines, unit_vectors
from bertkit.core.progress import console, status

# ---------------------------------------------------------------- search


def corpus_key(files: list[str], encoder, text_column: str) -> str:
    """Changes when any corpus file's content, the model, or the encoding settings change."""
    digest = hashlib.sha256()
    for file in files:
        digest.update(file.encode() + b"\0")
        with open(file, "rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                digest.update(block)
    digest.update(encoder.identity().encode() + b"\0" + text_column.encode())
    return digest.hexdigest()[:32]


def default_cache_dir() -> Path:
    """`search/` in bertkit's cache folder, the one the feature cache uses ($BERTKIT_CACHE, else
    $XDG_CACHE_HOME/bertkit, else ~/.cache/bertkit): one place decides where bertkit caches."""

    return cache_root() / "search"


def corpus_vectors(encoder, corpus: str, text_column: str, cache_dir: Path | None, batch_size: int):
    """(texts, unit vectors, whether they came from the cache) for a corpus path. Blank lines
    keep their place (their text is '', their vector zeros), so hit indices are line positions."""

    texts = list(read_lines(corpus, text_column, keep_blank=True, option="--text-column"))
    if not any(texts):
        raise BertkitError(f"{corpus}: the corpus has no text")
    cached = None
    if cache_dir is not None:
        cached = Path(cache_dir) / f"{corpus_key(corpus_files(corpus), encoder, text_column)}.npy"
        if cached.is_file():
            from rich.markup import escape

            vectors, damage = _read_cache(cached, (len(texts), encoder.dimension))
            if vectors is not None:
                console.print(f"[dim]corpus embeddings reused from {cached}[/dim]")
                return texts, vectors, True
            console.print(
                f"[yellow]note:[/yellow] the corpus embeddings in {escape(str(cached))} are damaged "
                f"({escape(damage)}); embedding the corpus again",
                soft_wrap=True,
            )
    with status(f"embedding {sum(1 for t in texts if t):,} corpus texts"):
        vectors = unit_vectors(encoder, texts, batch_size)
    if cached is not None:
        _write_cache(cached, vectors)
    return texts, vectors, False


def _read_cache(path: Path, shape: tuple[int, int]) -> tuple[np.ndarray | None, str]:
    """The cached vectors, or None and what is wrong with the file (cut short, not an array,
    made for another corpus or model width, not finite numbers): a cache is only ever a copy,
    so a damaged one is rebuilt, never trusted and never fatal."""
    try:
        vectors = np.load(path, allow_pickle=False)
    except (OSError, ValueError, EOFError) as err:
        return None, str(err).split("\n")[0].split(". ")[0].rstrip(".") or type(err).__name__
    if not isinstance(vectors, np.ndarray) or vectors.shape != shape:
        return None, f"shape {getattr(vectors, 'shape', '?')}, not {shape}"
    if vectors.dtype.kind != "f" or not np.isfinite(vectors).all():
        return None, "values that are not finite numbers"
    return vectors, ""


def _write_cache(path: Path, vectors: np.ndarray) -> None:
    """Keep the vectors for the next search, written atomically; a place that cannot be written
    costs only the time saved next time, so it is a warning, not an error."""
    from rich.markup import escape


    try:
        with atomic_path(path) as tmp, open(tmp, "wb") as handle:
            np.save(handle, vectors)
    except (BertkitError, OSError) as err:
        console.print(
            f"[yellow]warning:[/yellow] cannot keep the corpus embeddings in {escape(str(path))} ({escape(str(err))}); "
            "the search goes on without the cache (--cache-dir chooses another place)",
            soft_wrap=True,
        )


def top_hits(
    queries: np.ndarray, corpus: np.ndarray, k: int, block: int = 256, skip: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """(indices, scores) of the k most similar corpus rows for each query row, best first; rows
    where `skip` is true (blank lines) are never hits. The ranking is float32's (fast on a large
    corpus); each hit's score is its cosine as every command reports it (`pooling.cosines`)."""
    k = min(k, len(corpus) - (int(skip.sum()) if skip is not None else 0))
    if k <= 0:
        return np.zeros((len(queries), 0), dtype=int), np.zeros((len(queries), 0))
    all_index, all_score = [], []
    for start in range(0, len(queries), block):
        scores = queries[start : start + block] @ corpus.T
        if skip is not None:
            scores[:, skip] = -np.inf
        part = (
            np.argpartition(-scores, k - 1, axis=1)[:, :k]
            if k < scores.shape[1]
            else np.tile(np.arange(scores.shape[1]), (len(scores), 1))
        )
        chosen = np.take_along_axis(scores, part, axis=1)
        order = np.argsort(-chosen, axis=1, kind="stable")
        picked = np.take_along_axis(part, order, axis=1)
        rows = np.repeat(queries[start : start + block], picked.shape[1], axis=0)
        exact = cosines(rows, corpus[picked.reshape(-1)]).reshape(picked.shape)
        all_index.append(picked)
        all_score.append(np.where(np.isfinite(np.take_along_axis(chosen, order, axis=1)), exact, -np.inf))
    return np.concatenate(all_index), np.concatenate(all_score)


def search(encoder, corpus: str, queries: list[str], top_k: int, text_column: str, cache_dir, batch_size: int):
    """One result per query: {'query', 'hits': [{'index', 'score', 'text'}]}, in query order.
    `index` is the hit's position in the corpus (0-based, blank lines counted); a blank query
    gets no hits and `"empty": true`."""
    texts, vectors, _ = corpus_vectors(encoder, corpus, text_column, cache_dir, batch_size)
    asked = unit_vectors(encoder, queries, batch_size)
    index, score = top_hits(asked, vectors, top_k, skip=np.array([not t for t in texts]))
    yield from hit_records(queries, texts, index, score)


def hit_records(queries: list[str], texts: list[str], index: np.ndarray, score: np.ndarray):
    """The hits JSON lines of exact and of indexed search (`embeddings/index.py`) alike: one per
    query, its rows of `index` (corpus positions; negative ones are no hit) with their scores."""
    for query, rows, values in zip(queries, index, score, strict=True):
        if not query.strip():
            yield {"query": query, "hits": [], "empty": True}
            continue
        hits = [
            {"index": int(i), "score": round(float(s), 6), "text": texts[i]}
            for i, s in zip(rows, values, strict=True)
            if i >= 0
        ]
        yield {"query": query, "hits": hits}


def search_file(
    model: str,
    load: Callable,
    corpus: str,
    query: list[str],
    queries: str | None,
    output: str | None,
    top_k: int,
    text_column: str,
    cache_dir: Path | None,
    batch_size: int,
    rerank=None,
) -> None:
    """Search `corpus` for each of `query` (or of the lines of the file `queries`) with the
    encoder `load()` returns, and write the hits as JSON lines to `output` (stdout when None).
    `cache_dir` None keeps no embeddings. `rerank` (a `bertkit.embeddings.rerank.Reranker`)
    re-orders each query's top candidates. Every check that can fail is made before the model
    loads."""
    read = [queries, corpus, *bundle_inputs(model)]  # an adapter bundle's base too
    check_output_file(output, *read)
    check_cache_dir(cache_dir, *read)
    asked = asked_queries(query, queries, text_column)
    with atomic_text(output) as handle:
        encoder = load()
        with RecordWriter(handle, "jsonl") as writer:
            depth = rerank.depth(top_k) if rerank else top_k
            records = search(encoder, corpus, asked, depth, text_column, cache_dir, batch_size)
            for record in rerank.apply(records, top_k) if rerank else records:
                writer.write(record)
    encoder.report_truncation()


def asked_queries(query: list[str], queries: str | None, text_column: str) -> list[str]:
    """The queries of `--query` (repeatable) or of the file `--queries`, blank lines kept."""
    if bool(query) == bool(queries):
        raise BertkitError("give --query TEXT (repeatable) or --queries FILE, one of the two")
    asked = list(query) if query else list(read_lines(queries, text_column, keep_blank=True, option="--text-column"))
    if not asked:
        raise BertkitError(f"{queries}: no queries in it (the file is empty)")
    return asked

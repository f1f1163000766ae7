"""`bertkit similarity` and `bertkit search`: cosine similarity of text pairs or of every pair in
a small list (with an optional heatmap), and exact nearest-neighbour search of queries in a
corpus whose embeddings are cached, keyed by the corpus content and the model."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import numpy as np

from bertkit.data.readers import place_of, text_value
from bertkit.embeddings.pooling import unit_rows
from bertkit.errors import BertkitError

MATRIX_LIMIT = 5000  # texts; beyond this a full matrix is the wrong tool (use search)


def encode_texts(encoder, texts: list[str], batch_size: int = 32) -> np.ndarray:
    """Unit vectors of `texts`; an empty text gets a row of zeros (it is not run through the model)."""
    vectors = np.zeros((len(texts), encoder.dimension), dtype=np.float32)
    filled = [i for i, t in enumerate(texts) if t.strip()]
    if filled:
        vectors[filled] = unit_rows(encoder.encode([texts[i] for i in filled], batch_size))
    return vectors


def pair_scores(encoder, left: list[str], right: list[str], batch_size: int = 32) -> np.ndarray:
    """Cosine of each pair; NaN where either text is empty."""
    a, b = encode_texts(encoder, left, batch_size), encode_texts(encoder, right, batch_size)
    scores = (a * b).sum(axis=1)
    scores[[not x.strip() or not y.strip() for x, y in zip(left, right, strict=True)]] = np.nan
    return scores


def matrix_scores(encoder, texts: list[str], batch_size: int = 32) -> np.ndarray:
    """Cosine of every pair of texts; NaN in the rows and columns of empty texts."""
    if len(texts) > MATRIX_LIMIT:
        raise BertkitError(
            f"{len(texts):,} texts make too large a matrix (limit {MATRIX_LIMIT:,}); use `bertkit search` instead"
        )
    vectors = encode_texts(encoder, texts, batch_size)
    scores = vectors @ vectors.T
    empty = [not t.strip() for t in texts]
    scores[empty, :] = np.nan
    scores[:, empty] = np.nan
    return scores


def similarity_rows(encoder, records: list[dict], matrix: bool, columns: tuple[str, str], batch_size: int):
    """Output rows for `bertkit similarity` (pairs: each record with its score; a matrix: each
    text with its scores against all), and the matrix itself (None for pairs). A score that
    involves an empty text is null, and its row is marked `"empty": true`."""
    text_column, pair_column = columns
    texts = [text_value(r.get(text_column), place_of(r, i + 1), text_column) for i, r in enumerate(records)]
    if matrix:
        scores = matrix_scores(encoder, texts, batch_size)
        rows = []
        for i, (text, row) in enumerate(zip(texts, scores, strict=True)):
            rows.append({"index": i, "text": text, "scores": [_rounded(x) for x in row]})
            if not text.strip():
                rows[-1]["empty"] = True
        return rows, scores
    pairs = [text_value(r.get(pair_column), place_of(r, i + 1), pair_column) for i, r in enumerate(records)]
    rows = []
    for record, value in zip(records, pair_scores(encoder, texts, pairs, batch_size), strict=True):
        rows.append({**record, "score": _rounded(value)})
        if np.isnan(value):
            rows[-1]["empty"] = True
    return rows, None


def _rounded(value) -> float | None:
    return None if np.isnan(value) else round(float(value), 6)


def heatmap(matrix: np.ndarray, texts: list[str], path: Path) -> None:
    from bertkit.reports import _pyplot

    plt = _pyplot()
    n = len(texts)
    size = min(4 + 0.35 * n, 20)
    fig, ax = plt.subplots(figsize=(size + 1.5, size))
    lowest = float(np.nanmin(matrix)) if np.isfinite(matrix).any() else 0.0
    image = ax.imshow(np.ma.masked_invalid(matrix), cmap="viridis", vmin=min(0.0, lowest), vmax=1.0)
    if n <= 60:
        labels = [t if len(t) <= 40 else t[:37] + "..." for t in texts]
        ax.set_xticks(range(n), labels, rotation=60, ha="right", fontsize=7)
        ax.set_yticks(range(n), labels, fontsize=7)
    if n <= 15:
        for (i, j), value in np.ndenumerate(matrix):
            if np.isnan(value):
                continue
            ax.text(
                j, i, f"{value:.2f}", ha="center", va="center", fontsize=7, color="white" if value < 0.6 else "black"
            )
    fig.colorbar(image, ax=ax, label="cosine similarity")
    ax.set_title("Cosine similarity")
    fig.tight_layout()
    from bertkit.outputs import atomic_path

    with atomic_path(path) as tmp:
        fig.savefig(tmp, dpi=110, format="png")
    plt.close(fig)


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
    base = os.environ.get("BERTKIT_CACHE") or os.path.join(os.path.expanduser("~"), ".cache", "bertkit")
    return Path(base) / "search"


def corpus_vectors(encoder, corpus: str, text_column: str, cache_dir: Path | None, batch_size: int):
    """(texts, unit vectors, whether they came from the cache) for a corpus path. Blank lines
    keep their place (their text is '', their vector zeros), so hit indices are line positions."""
    from bertkit.data.corpus import corpus_files, read_lines
    from bertkit.progress import console, status

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
        vectors = encode_texts(encoder, texts, batch_size)
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

    from bertkit.outputs import atomic_path
    from bertkit.progress import console

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
    where `skip` is true (blank lines) are never hits."""
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
        all_index.append(np.take_along_axis(part, order, axis=1))
        all_score.append(np.take_along_axis(chosen, order, axis=1))
    return np.concatenate(all_index), np.concatenate(all_score)


def search(encoder, corpus: str, queries: list[str], top_k: int, text_column: str, cache_dir, batch_size: int):
    """One result per query: {'query', 'hits': [{'index', 'score', 'text'}]}, in query order.
    `index` is the hit's position in the corpus (0-based, blank lines counted); a blank query
    gets no hits and `"empty": true`."""
    texts, vectors, _ = corpus_vectors(encoder, corpus, text_column, cache_dir, batch_size)
    asked = encode_texts(encoder, queries, batch_size)
    index, score = top_hits(asked, vectors, top_k, skip=np.array([not t for t in texts]))
    for query, rows, values in zip(queries, index, score, strict=True):
        if not query.strip():
            yield {"query": query, "hits": [], "empty": True}
            continue
        hits = [
            {"index": int(i), "score": round(float(s), 6), "text": texts[i]} for i, s in zip(rows, values, strict=True)
        ]
        yield {"query": query, "hits": hits}

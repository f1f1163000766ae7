"""`bertkit similarity` and `bertkit search`: cosine similarity of text pairs or of every pair in
a small list (with an optional heatmap), and exact nearest-neighbour search of queries in a
corpus whose embeddings are cached, keyed by the corpus content and the model."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import numpy as np

from bertkit.embedding import unit_rows
from bertkit.errors import BertkitError

MATRIX_LIMIT = 5000  # texts; beyond this a full matrix is the wrong tool (use search)


def pair_scores(encoder, left: list[str], right: list[str], batch_size: int = 32) -> np.ndarray:
    a = unit_rows(encoder.encode(left, batch_size))
    b = unit_rows(encoder.encode(right, batch_size))
    return (a * b).sum(axis=1)


def matrix_scores(encoder, texts: list[str], batch_size: int = 32) -> np.ndarray:
    if len(texts) > MATRIX_LIMIT:
        raise BertkitError(
            f"{len(texts):,} texts make too large a matrix (limit {MATRIX_LIMIT:,}); use `bertkit search` instead"
        )
    vectors = unit_rows(encoder.encode(texts, batch_size))
    return vectors @ vectors.T


def heatmap(matrix: np.ndarray, texts: list[str], path: Path) -> None:
    from bertkit.reports import _pyplot

    plt = _pyplot()
    n = len(texts)
    size = min(4 + 0.35 * n, 20)
    fig, ax = plt.subplots(figsize=(size + 1.5, size))
    image = ax.imshow(matrix, cmap="viridis", vmin=min(0.0, float(matrix.min())), vmax=1.0)
    if n <= 60:
        labels = [t if len(t) <= 40 else t[:37] + "..." for t in texts]
        ax.set_xticks(range(n), labels, rotation=60, ha="right", fontsize=7)
        ax.set_yticks(range(n), labels, fontsize=7)
    if n <= 15:
        for (i, j), value in np.ndenumerate(matrix):
            ax.text(
                j, i, f"{value:.2f}", ha="center", va="center", fontsize=7, color="white" if value < 0.6 else "black"
            )
    fig.colorbar(image, ax=ax, label="cosine similarity")
    ax.set_title("Cosine similarity")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
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
    """(texts, unit vectors, whether they came from the cache) for a corpus path."""
    from bertkit.data.corpus import corpus_files, read_lines
    from bertkit.progress import console, status
    from bertkit.vectors import atomic_path

    texts = list(read_lines(corpus, text_column))
    if not texts:
        raise BertkitError(f"{corpus}: the corpus has no text")
    cached = None
    if cache_dir is not None:
        cached = cache_dir / f"{corpus_key(corpus_files(corpus), encoder, text_column)}.npy"
        if cached.is_file():
            vectors = np.load(cached)
            if len(vectors) == len(texts):
                console.print(f"[dim]corpus embeddings reused from {cached}[/dim]")
                return texts, vectors, True
    with status(f"embedding {len(texts):,} corpus texts"):
        vectors = unit_rows(encoder.encode(texts, batch_size))
    if cached is not None:
        cached.parent.mkdir(parents=True, exist_ok=True)
        with atomic_path(cached) as tmp, open(tmp, "wb") as handle:
            np.save(handle, vectors)
    return texts, vectors, False


def top_hits(queries: np.ndarray, corpus: np.ndarray, k: int, block: int = 256) -> tuple[np.ndarray, np.ndarray]:
    """(indices, scores) of the k most similar corpus rows for each query row, best first."""
    k = min(k, len(corpus))
    all_index, all_score = [], []
    for start in range(0, len(queries), block):
        scores = queries[start : start + block] @ corpus.T
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
    """One result per query: {'query', 'hits': [{'index', 'score', 'text'}]}, in query order."""
    texts, vectors, _ = corpus_vectors(encoder, corpus, text_column, cache_dir, batch_size)
    asked = unit_rows(encoder.encode(queries, batch_size))
    index, score = top_hits(asked, vectors, top_k)
    for query, rows, values in zip(queries, index, score, strict=True):
        hits = [
            {"index": int(i), "score": round(float(s), 6), "text": texts[i]} for i, s in zip(rows, values, strict=True)
        ]
        yield {"query": query, "hits": hits}

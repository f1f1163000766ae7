"""The approximate nearest-neighbour library under `bertkit index`: FAISS's HNSW graph over the
unit vectors (inner product, so the scores are the cosines exact search gives), each vector keyed
by its corpus position. FAISS was measured against USearch on the same graph (bench/ann_index.py,
docs/index-search.md) and chosen for that; this module is the only one that imports it, so the
library can change here alone."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from bertkit.errors import BertkitError

FILE = "vectors.faiss"
INSTALL = "pip install 'bertkit[index]'"


@dataclass(frozen=True)
class Params:
    """The graph's shape. Defaults from bench/ann_index.py at 200,000 vectors of 384 dimensions
    (docs/index-search.md): M 32 and efConstruction 200 are the graph that was measured, and
    ef_search 256 gave recall@10 0.991 there, a margin over 0.97 (160 gave 0.971, 192 0.978,
    128 0.957). On 3,000 real MiniLM sentence vectors 128 already gave 1.000: lower it
    (`index build --ef-search`) where speed matters more and recall was checked."""

    m: int = 32
    ef_construction: int = 200
    ef_search: int = 256


def require():
    """FAISS, or an error saying how to install it."""
    try:
        import faiss
    except ImportError:
        raise BertkitError(f"indexes need FAISS, which is not installed: {INSTALL}") from None
    return faiss


def describe(params: Params) -> dict:
    faiss = require()
    return {"library": "faiss", "version": faiss.__version__, "kind": "HNSW", **asdict(params)}


def new(dimension: int, params: Params):
    faiss = require()
    graph = faiss.IndexHNSWFlat(dimension, params.m, faiss.METRIC_INNER_PRODUCT)
    graph.hnsw.efConstruction = params.ef_construction
    graph.hnsw.efSearch = params.ef_search
    return faiss.IndexIDMap2(graph)


def add(index, keys: np.ndarray, vectors: np.ndarray) -> None:
    if len(keys):
        index.add_with_ids(np.ascontiguousarray(vectors, dtype=np.float32), keys.astype(np.int64))


def save(index, path: Path) -> None:
    require().write_index(index, str(path))


def load(path: Path, dimension: int):
    faiss = require()
    try:
        index = faiss.read_index(str(path))
    except RuntimeError as err:
        raise BertkitError(
            f"{path} cannot be read as a FAISS index ({str(err).splitlines()[0]}); build the index again"
        ) from None
    if index.d != dimension:
        raise BertkitError(
            f"{path} holds vectors of {index.d} dimensions, its index.json says {dimension}; build the index again"
        )
    return index


def search(index, vectors: np.ndarray, k: int, ef_search: int) -> tuple[np.ndarray, np.ndarray]:
    """(keys, scores) of the k best rows for each query, best first; a key of -1 is no hit (the
    graph found fewer than k)."""
    faiss = require()
    graph = faiss.downcast_index(index.index)
    graph.hnsw.efSearch = max(ef_search, k)  # HNSW needs a breadth of at least k to return k
    scores, keys = index.search(np.ascontiguousarray(vectors, dtype=np.float32), k)
    return keys, scores

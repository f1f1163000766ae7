"""The approximate nearest-neighbour library under `bertkit index`: FAISS's HNSW graph over the
unit vectors (inner product, so the scores are the cosines exact search gives), each vector keyed
by its corpus position. FAISS was measured against USearch on the same graph (bench/ann_index.py,
docs/index-search.md) and chosen for that; this module is the only one that imports it, so the
library can change here alone.

By default (`Params.quantized`) the graph walks over 8-bit copies of the vectors (a quarter of the
memory traffic of 32-bit floats, which is what an HNSW search spends its time on), and the
candidates it keeps (its search breadth, at least `RESCORE` x k) are re-scored with the exact
vectors, so the hits' scores are exact; on 200,000 real sentence vectors (same graph, same breadth,
same recall) this gave 1.5 to 1.7x the queries/s of the float graph. The 8-bit ranges (one per
dimension) are the first vectors' minimum to maximum, widened by a fifth on both sides for texts
added later; a later `index add` of text far outside them is clipped in the graph walk (so found
less surely), and still re-scored exactly: build from a corpus like the ones you will add. Indexes
built without it (`quantized: false`, or by an older bertkit) are plain HNSW graphs over the floats,
and load and search as before."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from bertkit.errors import BertkitError

FILE = "vectors.faiss"
INSTALL = "pip install 'bertkit[index]'"

if TYPE_CHECKING:  # numpy is imported where it is used: `bertkit --help` reads Params without it
    import numpy as np


RANGE_MARGIN = 0.2  # each 8-bit range: the first vectors' min to max, widened by this share of it on both sides
RESCORE = 2  # candidates re-scored exactly per hit asked for (quantized graphs): 2 x k is what was measured


@dataclass(frozen=True)
class Params:
    """The graph's shape. Defaults from bench/ann_index.py at 200,000 real sentence vectors of 384
    dimensions (IMDb sentences, all-MiniLM-L6-v2; docs/index-search.md): M 48 and efConstruction
    300 reached recall@10 0.97 at a smaller search breadth than M 32 / 200, for more queries/s; at
    ef_search 96 the quantized graph gave recall@10 0.978 against exact search. Raise it
    (`index build --ef-search`, or `search --ef-search` for one search) for crowded corpora: on the
    benchmark's synthetic near-duplicate vectors an M 32 graph needed 160 for 0.97."""

    m: int = 48
    ef_construction: int = 300
    ef_search: int = 96
    quantized: bool = True


def require():
    """FAISS, or an error saying how to install it."""
    try:
        import faiss
    except ImportError:
        raise BertkitError(f"indexes need FAISS, which is not installed: {INSTALL}") from None
    return faiss


def describe(params: Params) -> dict:
    faiss = require()
    kind = {"kind": "HNSW-SQ8", "rescore": RESCORE} if params.quantized else {"kind": "HNSW"}
    return {"library": "faiss", "version": faiss.__version__, **kind, **asdict(params)}


def new(dimension: int, params: Params):
    faiss = require()
    if params.quantized:
        graph = faiss.IndexHNSWSQ(dimension, faiss.ScalarQuantizer.QT_8bit, params.m, faiss.METRIC_INNER_PRODUCT)
        faiss.downcast_index(graph.storage).sq.rangestat_arg = RANGE_MARGIN
        top = faiss.IndexRefineFlat(graph)  # keeps the exact vectors too, and re-scores with them
        top.k_factor = RESCORE
    else:
        graph = top = faiss.IndexHNSWFlat(dimension, params.m, faiss.METRIC_INNER_PRODUCT)
    graph.hnsw.efConstruction = params.ef_construction
    graph.hnsw.efSearch = params.ef_search
    return faiss.IndexIDMap2(top)


def add(index, keys: np.ndarray, vectors: np.ndarray) -> None:
    import numpy as np

    if len(keys):
        vectors = np.ascontiguousarray(vectors, dtype=np.float32)
        if not index.is_trained:  # a quantized graph's first vectors set its 8-bit ranges
            index.train(vectors)
        index.add_with_ids(vectors, keys.astype(np.int64))


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


def _graph(index):
    """(the HNSW index inside the id map, the exact re-scoring layer around it or None)."""
    faiss = require()
    inner = faiss.downcast_index(index.index)
    if isinstance(inner, faiss.IndexRefine):
        return faiss.downcast_index(inner.base_index), inner
    return inner, None


def search(index, vectors: np.ndarray, k: int, ef_search: int) -> tuple[np.ndarray, np.ndarray]:
    """(keys, scores) of the k best rows for each query, best first; a key of -1 is no hit (the
    graph found fewer than k). A quantized graph's walk keeps its `ef_search` best candidates by
    their 8-bit scores, and all of them are re-scored exactly (at least RESCORE x k): a few hundred
    dot products against the thousands the walk computed, and no near-tie lost to rounding."""
    import numpy as np

    graph, rescoring = _graph(index)
    if rescoring is not None:
        rescoring.k_factor = max(RESCORE, ef_search / k)
        ef_search = max(ef_search, round(rescoring.k_factor * k))
    graph.hnsw.efSearch = max(ef_search, k)  # HNSW needs a breadth of at least k to return k
    scores, keys = index.search(np.ascontiguousarray(vectors, dtype=np.float32), k)
    return keys, scores

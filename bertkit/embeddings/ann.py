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
and load and search as before.

From IVF_MIN vectors at build (`kind: auto`), or when asked (`kind: ivf`), the index is not a graph
but an inverted file: k-means cuts the first vectors into lists, every vector is kept as a 4-bit
product-quantisation code (one 4-bit code per 4 dimensions) that FAISS scans with SIMD
("fast-scan"), a query scans its `probes` nearest lists, and the IVF_RESCORE x k best codes are
re-scored with the exact vectors. On the 200,000-vector benchmark it reached recall@10 0.972 at
10.2x exact search's queries/s (the graph: 0.979 at 6.3x in the same run), built in a sixth of the
time, and took less memory. Small corpora keep the graph: k-means needs tens of vectors a list.
Texts added later go to the lists of the first ones; an index grown far past its first corpus
scans longer lists, and is best built again."""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING

from bertkit.core.errors import BertkitError
from bertkit.core.extras import install_command
from bertkit.core.pooling import cosines
from bertkit.embeddings.ann_params import (
    CHECK_QUERIES,
    GRAPH_OPTIONS,
    IVF_MIN,
    IVF_RESCORE,
    KINDS,
    RANGE_MARGIN,
    RESCORE,
    Params,
    ivf_lists,
)
from bertkit.embeddings.search import top_hits

FILE = "vectors.faiss"

if TYPE_CHECKING:
    import numpy as np


def resolve(params: Params, dimension: int | None, count: int) -> Params:
    """`params` with its kind, lists and probes settled for a first corpus of `count` vectors;
    an IVF index asked for that these cannot hold is an error saying what to give instead.
    (`dimension` None: the checks that do not need it, before a model loads.)"""
    from dataclasses import replace

    if params.kind not in KINDS:
        raise BertkitError(f"index kind {params.kind!r}: give one of {', '.join(KINDS)}")
    fits = dimension is None or dimension % 8 == 0  # 4 dimensions a code, and fast-scan wants an even number
    graph = params.kind == "hnsw" or (params.kind == "auto" and (count < IVF_MIN or not fits))
    why = f"--kind {params.kind}" if params.kind != "auto" else f"auto picks it for {count:,} texts"
    if graph and (params.lists is not None or params.probes is not None):  # nothing given is dropped unsaid
        raise BertkitError(
            f"--lists and --probes set an IVF index, and this one is a graph ({why}; IVF from {IVF_MIN:,} texts): "
            "give --kind ivf, or leave them out"
        )
    if graph:
        return replace(params, kind="hnsw", lists=None, probes=None)
    changed = [option for option, field in GRAPH_OPTIONS.items() if getattr(params, field) != getattr(Params, field)]
    if changed:
        raise BertkitError(
            f"{', '.join(changed)} set a graph (HNSW), and this index is IVF ({why}): give --kind hnsw, or leave "
            "them out (an IVF index's settings are --lists and --probes)"
        )
    if not fits:
        raise BertkitError(
            f"an IVF index needs vectors whose dimension is a multiple of 8; this model's is {dimension}. "
            "Use --kind hnsw (or auto)"
        )
    lists = params.lists or ivf_lists(count)
    if count < max(lists, 16):
        raise BertkitError(
            f"an IVF index of {lists:,} lists needs at least {max(lists, 16):,} texts to learn them from; the "
            f"corpus has {count:,}. Give fewer --lists, or --kind hnsw (or auto, which picks the graph below "
            f"{IVF_MIN:,} texts)"
        )
    if params.probes is not None and params.probes > lists:
        raise BertkitError(f"--probes {params.probes}: an index of {lists:,} lists can scan at most {lists:,}")
    return replace(params, kind="ivf", lists=lists, probes=params.probes or max(1, lists // 4))


def require():
    """FAISS, or an error saying how to install it."""
    try:
        import faiss
    except ImportError:
        raise BertkitError(f"indexes need FAISS, which is not installed: {install_command('index')}") from None
    return faiss


def describe(params: Params) -> dict:
    """What index.json records of a resolved `params` (`resolve`)."""
    faiss = require()
    if params.kind == "ivf":
        settings = {"kind": "IVF-PQ4FS", "rescore": IVF_RESCORE, "lists": params.lists, "probes": params.probes}
        return {"library": "faiss", "version": faiss.__version__, **settings}
    kind = {"kind": "HNSW-SQ8", "rescore": RESCORE} if params.quantized else {"kind": "HNSW"}
    graph = {k: v for k, v in asdict(params).items() if k not in ("kind", "lists", "probes")}
    return {"library": "faiss", "version": faiss.__version__, **kind, **graph}


def kind_of(index) -> str:
    """The kind (`describe`'s "kind") of a FAISS index as read: what index.json's ann.kind must say."""
    faiss = require()
    graph, rescoring = _graph(index)
    if isinstance(graph, faiss.IndexIVF):
        return "IVF-PQ4FS"
    return "HNSW-SQ8" if rescoring is not None else "HNSW"


def is_ivf(described: dict) -> bool:
    return str(described.get("kind", "")).startswith("IVF")


def default_breadth(described: dict) -> int:
    """The search breadth an index searches with unless told: its probes (IVF) or efSearch (graphs)."""
    return described["probes"] if is_ivf(described) else described["ef_search"]


def new(dimension: int, params: Params):
    """An empty index of a resolved `params` (`resolve`), keyed by corpus position."""
    faiss = require()
    if params.kind == "ivf":
        top = faiss.index_factory(
            dimension, f"IVF{params.lists},PQ{dimension // 4}x4fs,RFlat", faiss.METRIC_INNER_PRODUCT
        )
        top.k_factor = IVF_RESCORE
        lists = faiss.extract_index_ivf(top)
        lists.nprobe = params.probes
        # k-means warns on stderr below 39 vectors a centre; bertkit's own check (`check_recall`) says
        # what matters to the user, the recall, in its own words
        lists.cp.min_points_per_centroid = 1
        faiss.downcast_index(lists).pq.cp.min_points_per_centroid = 1
        return faiss.IndexIDMap2(top)
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
    with open(path, "rb") as handle:
        return read(handle, path, dimension)


def read(handle, path: Path, dimension: int):
    """The index in the open binary file `handle` (named `path` in errors: read from the handle, a
    file that a writer removes meanwhile is still read whole), checked to hold vectors of `dimension`."""
    faiss = require()
    try:
        index = faiss.read_index(faiss.PyCallbackIOReader(handle.read, 1 << 22))
    except RuntimeError as err:
        raise BertkitError(
            f"{path} cannot be read as a FAISS index ({str(err).splitlines()[0]}); the index is damaged: "
            "rebuild the index"
        ) from None
    if handle.read(1):  # more than one index's bytes: not a file bertkit wrote
        raise BertkitError(f"{path} holds more than a FAISS index; the index is damaged: rebuild the index")
    if index.d != dimension:
        raise BertkitError(
            f"{path} holds vectors of {index.d} dimensions, its index.json says {dimension}; the index is damaged: "
            "rebuild the index"
        )
    if not hasattr(index, "id_map"):
        raise BertkitError(
            f"{path} is a FAISS index without corpus positions, not one bertkit wrote; rebuild the index"
        )
    return index


def keys(index) -> np.ndarray:
    """The corpus positions the vectors are keyed by."""
    return require().vector_to_array(index.id_map).astype("int64")


def _graph(index):
    """(the HNSW or IVF index inside the id map, the exact re-scoring layer around it or None)."""
    faiss = require()
    inner = faiss.downcast_index(index.index)
    if isinstance(inner, faiss.IndexRefine):
        return faiss.downcast_index(inner.base_index), inner
    return inner, None


def search(index, vectors: np.ndarray, k: int, ef_search: int) -> tuple[np.ndarray, np.ndarray]:
    """(keys, scores) of the k best rows for each query, best first; a key of -1 is no hit (the
    index found fewer than k). `ef_search` is the search breadth: for a graph its efSearch, for an
    IVF index the lists scanned. A quantized graph's walk keeps its `ef_search` best candidates by
    their 8-bit scores, and all of them are re-scored exactly (at least RESCORE x k): a few hundred
    dot products against the thousands the walk computed, and no near-tie lost to rounding. An IVF
    index re-scores the IVF_RESCORE x k best codes of the lists it scanned."""
    import numpy as np

    faiss = require()
    graph, rescoring = _graph(index)
    vectors = np.ascontiguousarray(vectors, dtype=np.float32)
    if isinstance(graph, faiss.IndexIVF):
        graph.nprobe = max(1, min(ef_search, graph.nlist))
        rescoring.k_factor = IVF_RESCORE
        scores, keys = index.search(vectors, k)
        short = np.flatnonzero((keys < 0).any(axis=1)) if index.ntotal >= k else []
        if len(short):  # the lists scanned held fewer than k texts: those queries scan every list
            graph.nprobe = graph.nlist
            scores[short], keys[short] = index.search(vectors[short], k)
        return keys, exact_scores(index, vectors, keys, scores)
    if rescoring is not None:
        rescoring.k_factor = max(RESCORE, ef_search / k)
        ef_search = max(ef_search, round(rescoring.k_factor * k))
    graph.hnsw.efSearch = max(ef_search, k)  # HNSW needs a breadth of at least k to return k
    scores, keys = index.search(vectors, k)
    return keys, exact_scores(index, vectors, keys, scores)


def exact_scores(index, vectors: np.ndarray, keys: np.ndarray, scores: np.ndarray) -> np.ndarray:
    """Each hit's score as every command reports a cosine (`pooling.cosines`, float64), from the
    index's own copy of its exact vectors, in place of FAISS's float32 sum (another order of the same
    products, so other last digits than `search` without an index or `similarity` gave)."""
    import numpy as np

    found = keys >= 0
    if not found.any():
        return scores
    stored = index.reconstruct_batch(keys[found].astype(np.int64))
    rows = np.repeat(vectors, keys.shape[1], axis=0)[found.reshape(-1)]
    exact = scores.astype(np.float64)
    exact[found] = cosines(rows, stored)
    return exact


def check_recall(index, keys: np.ndarray, vectors: np.ndarray, breadth: int, k: int = 10) -> float:
    """The share of exact search's top k (the query itself left out) that the index finds, for
    CHECK_QUERIES of its own vectors (evenly spaced) as queries."""
    import numpy as np


    if len(keys) <= k:
        return 1.0
    rows = np.linspace(0, len(keys) - 1, min(CHECK_QUERIES, len(keys))).astype(int)
    truth, _ = top_hits(vectors[rows], vectors, k + 1)
    found, _ = search(index, vectors[rows], k + 1, breadth)
    shares = []
    for row, exact, got in zip(rows, truth, found, strict=True):
        wanted = {int(keys[i]) for i in exact if i != row}
        shares.append(len(wanted & {int(g) for g in got}) / len(wanted))
    return float(np.mean(shares))

"""The settings of an approximate nearest-neighbour index (`Params`) and the limits of each, apart
from the index itself (bertkit/embeddings/ann.py): the command line reads them for its options and
help, and stays light (`bertkit --help` imports neither numpy nor FAISS)."""

from __future__ import annotations

import math
from dataclasses import dataclass

RANGE_MARGIN = 0.2  # each 8-bit range: the first vectors' min to max, widened by this share of it on both sides
RESCORE = 2  # candidates re-scored exactly per hit asked for (quantized graphs): 2 x k is what was measured
IVF_MIN = 50_000  # vectors at build from which `kind: auto` makes an IVF index (about 49 a list at 1,024 lists)
IVF_RESCORE = 30  # codes re-scored exactly per hit asked for (IVF): 50 x k added 0.005 recall for 15% of the speed
# An IVF index checks itself as it is built: CHECK_QUERIES of its own vectors search it at its default
# probes and the top 10 is compared with exact search's. Below CHECK_RECALL (vectors crowded into one
# narrow cone, as an untuned model's can be, leave the 4-bit codes unable to tell neighbours apart),
# `auto` builds the graph instead and an explicit `ivf` says so.
CHECK_QUERIES, CHECK_RECALL = 200, 0.95
KINDS = ("auto", "ivf", "hnsw")
# The largest value each integer setting may take (an option, or a field of index.json): FAISS keeps
# them in C ints, and a search allocates heaps of the breadth it is given, so a value past these
# would overflow there or exhaust the memory (a search of all its queries at once keeps breadth x
# queries candidates: 1.2 GB for 1,000 queries at 100,000); each is far beyond any useful setting.
LIMITS = {"m": 1024, "ef_construction": 100_000, "ef_search": 100_000, "lists": 1 << 22, "probes": 1 << 22}
KIND_NAMES = ("HNSW", "HNSW-SQ8", "IVF-PQ4FS")  # what index.json's ann.kind may say (`describe`)
GRAPH_OPTIONS = {
    "--links": "m", "--ef-construction": "ef_construction", "--ef-search": "ef_search", "--no-quantize": "quantized"
}  # fmt: skip


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
    kind: str = "auto"  # auto: an IVF index from IVF_MIN vectors at build, the graph below that
    lists: int | None = None  # IVF: k-means lists (None: from the corpus size, `ivf_lists`)
    probes: int | None = None  # IVF: lists scanned per query by default (None: a quarter of the lists)


def ivf_lists(count: int) -> int:
    """The power of two nearest 4.6 x sqrt(count): 2,048 lists for 200,000 vectors, where 512 probes
    (a quarter) gave recall@10 0.972; 1,024 and 4,096 lists needed more of the corpus scanned for
    0.97 (bench/ann_index.py, docs/index-search.md)."""
    return 2 ** max(0, round(math.log2(4.6 * math.sqrt(max(count, 1)))))



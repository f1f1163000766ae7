"""Approximate nearest-neighbour search against bertkit's exact search, FAISS against USearch, in one run.

The corpus (--corpus), N vectors (default 200,000) of 384 dimensions, unit length:
  - imdb (the default): real text. The first N distinct sentences (4 words or more) of the IMDb
    training reviews, encoded with the packaged all-MiniLM-L6-v2 (mean pooling, normalised); about
    19 minutes on 2 idle CPU cores, cached (--cache) so a second run skips it. The queries: Q
    (default 1,000) distinct sentences of the IMDb test reviews that are not in the corpus.
  - mixes: B real vectors (default 10,000) of the first B distinct SST-2 training phrases of 4 words
    or more, and N - B synthetic ones, each a random mix of two of the real ones plus noise:
    unit(w * a + (1 - w) * b + s * g), w uniform in [0.5, 1], a and b real vectors drawn at random,
    g a standard normal vector scaled to unit expected length, s = --noise (default 0.15).
    So the corpus lies around the real vectors' manifold, blurred by full-rank noise that crowds
    every query's top 10 with near-ties: harder for a graph index than real text. The queries:
    SST-2 dev sentences, then further training phrases not in the corpus.

What is measured, all in this one run and on the same queries:
  - exact: bertkit's own `top_hits` (embeddings/search.py, the code `bertkit search` runs), all
    queries at once; it gives the true top 10;
  - each index: build time, peak resident memory of the process that builds and queries it (in its
    own process, the vectors it was handed included, so the number is the whole cost), size on disk,
    then for each search breadth (efSearch / expansion_search; nprobe, the lists scanned, for the IVF
    index): recall@10 against exact and queries/s
    over the whole query batch.
Every timing, exact and indexed, is the median of 3 passes over all the queries.
Searches, exact and indexed, run on --threads threads (default 1, so queries/s compare like with like);
the builds on --build-threads (default 2, the cores of the machine this was measured on).

Usage: python bench/ann_index.py [--corpus imdb|mixes] [--n 200000] [--base 10000] [--queries 1000]
       [--threads 1] [--build-threads 2] [--only faiss-hnsw32 ...]
Encoded vectors are kept in --cache (default ~/.cache/bertkit/bench-ann) so a second run skips encoding.
Writes bench/results/ann_index.json and prints a table.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import DATA, require  # noqa: E402

DIM, K = 384, 10


def limit_threads(threads: int) -> None:
    for name in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[name] = str(threads)


def real_texts(base: int, queries: int) -> tuple[list[str], list[str]]:
    def lines(path):
        with open(require(path), encoding="utf-8") as handle:
            next(handle)  # the header
            for line in handle:
                text = line.rsplit("\t", 1)[0].strip()
                if len(text.split()) >= 4:
                    yield text

    seen, corpus, rest = set(), [], []
    for text in lines(DATA / "en/sst2/train.tsv"):
        if text in seen:
            continue
        seen.add(text)
        (corpus if len(corpus) < base else rest).append(text)
        if len(rest) >= queries:
            break
    asked = [t for t in lines(DATA / "en/sst2/dev.tsv") if t not in seen]
    return corpus, (asked + rest)[:queries]


def real_vectors(base: int, queries: int, cache: Path):
    import numpy as np

    path = cache / f"sst2-minilm-{base}-{queries}.npz"
    if path.is_file():
        kept = np.load(path)
        return kept["corpus"], kept["queries"], 0.0
    from common import minilm_path

    from bertkit.core.pooling import unit_vectors
    from bertkit.tasks.embed.encoder import load_encoder

    corpus, asked = real_texts(base, queries)
    encoder = load_encoder(minilm_path())
    started = time.perf_counter()
    vectors = unit_vectors(encoder, corpus + asked, 64)
    took = time.perf_counter() - started
    cache.mkdir(parents=True, exist_ok=True)
    np.savez(path, corpus=vectors[: len(corpus)], queries=vectors[len(corpus) :])
    return vectors[: len(corpus)], vectors[len(corpus) :], took


def imdb_sentences(path: Path, skip: set[str]):
    """Distinct IMDb review sentences of 4 words or more, in file order, none of them in `skip`."""
    import gzip
    import re

    with gzip.open(require(path), "rt", encoding="utf-8") as handle:
        for line in handle:
            review = json.loads(line)["text"].replace("<br />", " ")
            for sentence in re.split(r"(?<=[.!?])\s+", review):
                sentence = sentence.strip()
                if len(sentence.split()) >= 4 and sentence not in skip:
                    skip.add(sentence)
                    yield sentence


def imdb_vectors(n: int, queries: int, cache: Path):
    """The real corpus: the first n distinct IMDb train-review sentences, and `queries` sentences of
    test reviews that are not in it, all encoded with the packaged MiniLM (cached)."""
    import itertools

    import numpy as np

    path = cache / f"imdb-minilm-{n}-{queries}.npz"
    if path.is_file():
        kept = np.load(path)
        return kept["corpus"], kept["queries"], float(kept["encode_s"])
    from common import minilm_path

    from bertkit.core.pooling import unit_vectors
    from bertkit.tasks.embed.encoder import load_encoder

    seen: set[str] = set()
    corpus = list(itertools.islice(imdb_sentences(DATA / "en/imdb/train.jsonl.gz", seen), n))
    asked = list(itertools.islice(imdb_sentences(DATA / "en/imdb/test.jsonl.gz", seen), queries))
    if len(corpus) < n:
        sys.exit(f"IMDb train holds {len(corpus):,} distinct sentences, fewer than --n {n:,}")
    encoder = load_encoder(minilm_path())
    started = time.perf_counter()
    vectors = unit_vectors(encoder, corpus + asked, 64)
    took = time.perf_counter() - started
    cache.mkdir(parents=True, exist_ok=True)
    np.savez(path, corpus=vectors[:n], queries=vectors[n:], encode_s=took)
    return vectors[:n], vectors[n:], took


def grow(base, n: int, noise: float, seed: int = 0):
    """`base` plus n - len(base) noisy mixes of two of its rows, all unit length, float32."""
    import numpy as np

    rng = np.random.default_rng(seed)
    extra = n - len(base)
    a, b = rng.integers(len(base), size=extra), rng.integers(len(base), size=extra)
    w = rng.uniform(0.5, 1.0, size=(extra, 1)).astype(np.float32)
    mixed = w * base[a] + (1 - w) * base[b]
    mixed += noise * rng.standard_normal((extra, base.shape[1]), dtype=np.float32) / np.sqrt(base.shape[1])
    mixed /= np.linalg.norm(mixed, axis=1, keepdims=True)
    return np.concatenate([base, mixed]).astype(np.float32)


# ---------------------------------------------------------------- one library, in its own process

# HNSW graphs in both: M / connectivity 32 and efConstruction / expansion_add 200 for both libraries
# (the same graph, so the comparison is of the implementations); f32 keeps the scores exact
CONFIGS = {
    # what `bertkit index build` builds by default: bertkit/embeddings/ann.py itself (from 50,000 vectors
    # an IVF index of 4-bit fast-scan codes, the best re-scored with the exact vectors), and its graph
    # (`--kind hnsw`, the default below 50,000: HNSW over 8-bit codes, candidates re-scored exactly)
    "bertkit-default": {"library": "bertkit"},  # ann.Params() as `bertkit index build` uses it
    "bertkit-hnsw": {"library": "bertkit", "kind": "hnsw"},
    "faiss-hnsw32": {"library": "faiss", "m": 32, "ef_construction": 200},
    "usearch-hnsw32": {"library": "usearch", "m": 32, "ef_construction": 200},
    # not a graph: 2,048 k-means lists of 4-bit PQ codes (96 sub-vectors of 4 dimensions) scanned with
    # FAISS's SIMD fast-scan, the k_factor x k best re-scored with the exact vectors; its search breadth
    # is nprobe, the lists scanned per query (built with FAISS alone: what bertkit-default became)
    "faiss-ivf2048-pq96fs": {"library": "faiss-ivf", "nlist": 2048, "pq": 96, "k_factor": 30},
}
SEARCH_BREADTHS = (16, 32, 64, 96, 128, 160, 192, 256)
IVF_PROBES = (128, 256, 384, 512, 768)  # lists scanned per query, for the IVF configs
REPEATS = 3  # every timing, exact and indexed, is the median of this many passes over all queries


def memory_mb(field: str) -> float:
    """VmRSS (now) or VmHWM (peak) of this process from /proc: unlike getrusage's maxrss, the
    peak is this program's own, not the parent's it was forked from."""
    with open("/proc/self/status") as handle:
        for line in handle:
            if line.startswith(field + ":"):
                return int(line.split()[1]) / 1024
    return float("nan")


def worker(name: str, folder: Path, threads: int, build_threads: int) -> dict:
    import numpy as np

    config = CONFIGS[name]
    corpus, queries = np.load(folder / "corpus.npy"), np.load(folder / "queries.npy")
    truth = np.load(folder / "truth.npy")
    loaded = memory_mb("VmRSS")
    started = time.perf_counter()
    if config["library"] == "bertkit":
        import faiss

        from bertkit.embeddings import ann

        faiss.omp_set_num_threads(build_threads)
        asked = ann.Params(kind=config.get("kind", "auto"))
        params = ann.resolve(asked, corpus.shape[1], len(corpus))  # as `bertkit index build` settles them
        config.update({k: v for k, v in ann.describe(params).items() if k != "library"})
        index = ann.new(corpus.shape[1], params)
        ann.add(index, np.arange(len(corpus)), corpus)
        faiss.omp_set_num_threads(threads)
        version = faiss.__version__
    elif config["library"] == "faiss":
        import faiss

        faiss.omp_set_num_threads(build_threads)
        index = faiss.IndexHNSWFlat(corpus.shape[1], config["m"], faiss.METRIC_INNER_PRODUCT)
        index.hnsw.efConstruction = config["ef_construction"]
        index.add(corpus)
        faiss.omp_set_num_threads(threads)
        version = faiss.__version__
    elif config["library"] == "faiss-ivf":
        import faiss

        faiss.omp_set_num_threads(build_threads)
        factory = f"IVF{config['nlist']},PQ{config['pq']}x4fs,RFlat"
        index = faiss.index_factory(corpus.shape[1], factory, faiss.METRIC_INNER_PRODUCT)
        index.train(corpus)
        index.add(corpus)
        index.k_factor = config["k_factor"]
        faiss.omp_set_num_threads(threads)
        version = faiss.__version__
    else:
        import usearch
        from usearch.index import Index

        index = Index(
            ndim=corpus.shape[1], metric="ip", dtype="f32",
            connectivity=config["m"], expansion_add=config["ef_construction"],
        )  # fmt: skip
        index.add(np.arange(len(corpus)), corpus, threads=build_threads)
        version = usearch.__version__
    build = time.perf_counter() - started
    saved = folder / f"{name}.index"
    if config["library"] in ("faiss", "bertkit", "faiss-ivf"):
        faiss.write_index(index, str(saved))
    else:
        index.save(str(saved))
    rows = []
    ivf = config["library"] == "faiss-ivf" or str(config.get("kind", "")).startswith("IVF")
    for breadth in IVF_PROBES if ivf else SEARCH_BREADTHS:
        timings = []
        for _ in range(REPEATS):
            started = time.perf_counter()
            if config["library"] == "bertkit":
                found, _ = ann.search(index, queries, K, breadth)
            elif config["library"] == "faiss":
                index.hnsw.efSearch = max(breadth, K)
                _, found = index.search(queries, K)
            elif config["library"] == "faiss-ivf":
                faiss.extract_index_ivf(index).nprobe = breadth
                _, found = index.search(queries, K)
            else:
                index.expansion_search = max(breadth, K)
                found = index.search(queries, K, threads=threads).keys
            timings.append(time.perf_counter() - started)
        took = statistics.median(timings)
        recall = np.mean([len(set(f) & set(t)) / K for f, t in zip(found, truth, strict=True)])
        rows.append({"breadth": breadth, "recall@10": round(float(recall), 4), "qps": round(len(queries) / took, 1)})
    peak = memory_mb("VmHWM")
    return {
        "name": name, "library": config["library"], "version": version, **config,
        "build_s": round(build, 1), "peak_rss_mb": round(peak), "rss_before_build_mb": round(loaded),
        "build_threads": build_threads,
        "disk_mb": round(saved.stat().st_size / 2**20, 1), "searches": rows,
    }  # fmt: skip


def run_worker(name: str, folder: Path, threads: int, build_threads: int) -> dict:
    command = [sys.executable, __file__, "--worker", name, "--folder", str(folder), "--threads", str(threads)]
    done = subprocess.run(
        [*command, "--build-threads", str(build_threads)],
        capture_output=True, text=True, env=os.environ,
    )  # fmt: skip
    if done.returncode:
        return {"name": name, "error": done.stderr.strip().splitlines()[-1:]}
    return json.loads(done.stdout.strip().splitlines()[-1])


# ---------------------------------------------------------------- the run


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--n", type=int, default=200_000)
    parser.add_argument("--base", type=int, default=10_000)
    parser.add_argument("--queries", type=int, default=1_000)
    parser.add_argument("--corpus", choices=("imdb", "mixes"), default="imdb")
    parser.add_argument("--noise", type=float, default=0.15)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--build-threads", type=int, default=2)
    parser.add_argument("--only", nargs="*", default=list(CONFIGS), choices=list(CONFIGS))
    parser.add_argument("--cache", type=Path, default=Path.home() / ".cache" / "bertkit" / "bench-ann")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    parser.add_argument("--folder", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    limit_threads(args.threads)
    if args.worker:
        print(json.dumps(worker(args.worker, args.folder, args.threads, args.build_threads)))
        return
    import numpy as np
    from common import save, table

    from bertkit.embeddings.search import top_hits

    print(f"load average at start: {os.getloadavg()}")
    if args.corpus == "imdb":
        corpus, queries, encode_s = imdb_vectors(args.n, args.queries, args.cache)
    else:
        base, queries, encode_s = real_vectors(args.base, args.queries, args.cache)
        corpus = grow(base, args.n, args.noise)
    timings = []
    for _ in range(REPEATS):
        started = time.perf_counter()
        truth, _ = top_hits(queries, corpus, K)
        timings.append(time.perf_counter() - started)
    exact_s = statistics.median(timings)
    exact_qps = len(queries) / exact_s
    print(f"exact search (bertkit top_hits): {len(queries)} queries over {len(corpus):,} vectors in {exact_s:.2f} s")
    rows, results = [], []
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        np.save(folder / "corpus.npy", corpus)
        np.save(folder / "queries.npy", queries)
        np.save(folder / "truth.npy", truth)
        del corpus
        for name in args.only:
            result = run_worker(name, folder, args.threads, args.build_threads)
            results.append(result)
            if "error" in result:
                print(f"{name}: failed: {result['error']}")
                continue
            for search in result["searches"]:
                rows.append({
                    "index": name, "build_s": result["build_s"], "peak_rss_mb": result["peak_rss_mb"],
                    "disk_mb": result["disk_mb"], **search, "x_exact": round(search["qps"] / exact_qps, 1),
                })  # fmt: skip
    print(table(rows, ["index", "build_s", "peak_rss_mb", "disk_mb", "breadth", "recall@10", "qps", "x_exact"]))
    print(f"exact: {exact_qps:.0f} queries/s (threads {args.threads})")
    settings = {"load_average_at_end": os.getloadavg()}
    settings |= {k: getattr(args, k) for k in ("corpus", "n", "base", "queries", "noise", "threads", "build_threads")}
    path = save("ann_index", {
        "settings": settings, "encode_real_s": round(encode_s, 1), "exact_s": round(exact_s, 3),
        "exact_qps": round(exact_qps, 1), "indexes": results,
    })  # fmt: skip
    print(f"written to {path}")


if __name__ == "__main__":
    main()

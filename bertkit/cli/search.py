"""`bertkit search`: exact semantic search of queries in a corpus."""

from __future__ import annotations

from pathlib import Path

import typer

from bertkit.cli.options import (
    COUNT_LIMIT,
    BatchOption,
    CacheDirOption,
    DeviceOption,
    MaxLengthOption,
    NoCacheOption,
    PoolingOption,
    RuntimeOption,
    TextColumnOption,
    TrustOption,
)
from bertkit.core.errors import BertkitError
from bertkit.embeddings.ann_params import LIMITS


def search(
    model: str | None = typer.Option(
        None, "--model", "-m", help="Any BERT-family model: a bertkit bundle, a HF model folder or a hub id."
    ),
    corpus: str | None = typer.Option(
        None, "--corpus", help="The texts to search: a text file (one a line), a folder or glob of them, or JSONL/CSV."
    ),
    index: str | None = typer.Option(
        None, "--index", help="Search an index made by `bertkit index build` instead (no --model or --corpus)."
    ),
    ef_search: int | None = typer.Option(
        None,
        "--ef-search",
        min=1,
        max=LIMITS["ef_search"],
        help="--index: the graph's search breadth for this search (default: the index's).",
    ),
    probes: int | None = typer.Option(
        None,
        "--probes",
        min=1,
        max=LIMITS["probes"],
        help="--index of kind IVF: lists scanned per query in this search (default: the index's).",
    ),
    query: list[str] | None = typer.Option(None, "--query", "-q", help="A query (repeatable)."),
    queries: str | None = typer.Option(None, "--queries", help="A file of queries, one a line (or JSONL/CSV)."),
    top_k: int = typer.Option(5, "--top-k", "-k", min=1, max=COUNT_LIMIT, help="Hits per query."),
    output: str | None = typer.Option(None, "--output", "-o", help="hits.jsonl (stdout when absent)."),
    text_column: str = TextColumnOption,
    cache_dir: Path | None = CacheDirOption,
    no_cache: bool = NoCacheOption,
    pooling: str | None = PoolingOption,
    max_length: int | None = MaxLengthOption,
    batch_size: int = BatchOption,
    device: str | None = DeviceOption,
    trust_remote_code: bool = TrustOption,
    runtime: str = RuntimeOption,
    rerank: str | None = typer.Option(
        None, "--rerank", help="A cross-encoder (`bertkit train rerank` bundle) that re-orders each query's candidates."
    ),
    # 50: the proposal; the gold passage is nearly always among a bi-encoder's top 50, and the cost
    # grows with it (bench/rerank_quality.py reports ms per query at its --top)
    rerank_top: int = typer.Option(
        50, "--rerank-top", min=1, max=COUNT_LIMIT, help="--rerank: candidates re-scored per query."
    ),
) -> None:
    """Exact semantic search: the corpus texts closest (cosine) to each query. Hits give their
    position in the corpus (blank lines counted); a blank query line gets no hits. With --index,
    approximate search in an index, which knows its model and corpus. With --rerank, the top
    --rerank-top candidates are re-scored by a cross-encoder and sorted by its score."""
    reranker = None
    if rerank:
        from bertkit.embeddings.rerank import Reranker

        reranker = Reranker(rerank, rerank_top, batch_size, device, trust_remote_code, runtime)
    if index is not None:
        given = {"--model": model, "--corpus": corpus, "--pooling": pooling, "--max-length": max_length}
        _search_index(
            index, given, query, queries, output, top_k, text_column, batch_size, device, trust_remote_code, runtime,
            reranker, ef_search, probes,
        )  # fmt: skip
        return
    for option, value in (("--ef-search", ef_search), ("--probes", probes)):
        if value is not None:
            raise BertkitError(f"{option} is the breadth of an index's search: give it with --index, or leave it out")
    if model is None or corpus is None:
        raise BertkitError("give --model and --corpus for exact search, or --index for an index's")
    from functools import partial

    from bertkit.embeddings.search import default_cache_dir, search_file
    from bertkit.tasks.embed.encoder import load_encoder

    cache = None if no_cache else (cache_dir or default_cache_dir())
    load = partial(load_encoder, model, pooling, None, max_length, device, trust_remote_code, runtime)
    search_file(model, load, corpus, query or [], queries, output, top_k, text_column, cache, batch_size, reranker)


def _search_index(
    index, given, query, queries, output, top_k, text_column, batch_size, device, trust, runtime, rerank, ef_search,
    probes,
):  # fmt: skip
    from bertkit.embeddings.index import search_index_file

    clashing = [option for option, value in given.items() if value is not None]
    if clashing:
        raise BertkitError(
            f"--index {index}: drop {', '.join(clashing)}; the index holds its corpus and the model and settings "
            "it was encoded with (add texts with `bertkit index add`)"
        )
    search_index_file(
        index, query or [], queries, output, top_k, text_column, batch_size, device, trust, runtime,
        {"--ef-search": ef_search, "--probes": probes}, rerank,
    )  # fmt: skip

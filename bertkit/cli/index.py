"""`bertkit index build` and `bertkit index add`: an approximate nearest-neighbour index of a corpus
for `bertkit search --index` (the `index` extra)."""

from __future__ import annotations

import typer

from bertkit.cli.options import (
    BatchOption,
    DeviceOption,
    MaxLengthOption,
    ModelOption,
    PoolingOption,
    RuntimeOption,
    TextColumnOption,
    TrustOption,
)
from bertkit.embeddings.ann_params import IVF_MIN, LIMITS, Params

index_app = typer.Typer(
    help="Approximate nearest-neighbour indexes for `bertkit search --index` (large corpora).", no_args_is_help=True
)
CorpusOption = typer.Option(
    ..., "--corpus", help="The texts: a text file (one a line), a folder or glob of them, or JSONL/CSV."
)


@index_app.command("build")
def build(
    model: str = ModelOption,
    corpus: str = CorpusOption,
    output: str = typer.Option(..., "--output", "-o", help="The index folder to write."),
    text_column: str = TextColumnOption,
    pooling: str | None = PoolingOption,
    max_length: int | None = MaxLengthOption,
    kind: str = typer.Option(
        Params.kind,
        "--kind",
        help="auto: an IVF index (k-means lists of 4-bit codes, re-scored exactly) from "
        f"{IVF_MIN:,} texts, an HNSW graph below; ivf or hnsw to choose.",
    ),
    lists: int | None = typer.Option(
        None,
        "--lists",
        min=1,
        max=LIMITS["lists"],
        help="IVF: k-means lists (default: the power of two nearest 4.6 x sqrt(texts)).",
    ),
    probes: int | None = typer.Option(
        None,
        "--probes",
        min=1,
        max=LIMITS["probes"],
        help="IVF: lists scanned per query, kept as the index's default (default: a quarter of the lists).",
    ),
    links: int = typer.Option(
        Params.m, "--links", min=4, max=LIMITS["m"], help="HNSW M: links per vector (more: better recall, more memory)."
    ),
    ef_construction: int = typer.Option(
        Params.ef_construction,
        "--ef-construction",
        min=8,
        max=LIMITS["ef_construction"],
        help="HNSW breadth while building.",
    ),
    ef_search: int = typer.Option(
        Params.ef_search,
        "--ef-search",
        min=1,
        max=LIMITS["ef_search"],
        help="HNSW breadth while searching, kept as the index's default.",
    ),
    quantize: bool = typer.Option(
        Params.quantized,
        "--quantize/--no-quantize",
        help="Walk the graph over 8-bit copies of the vectors and re-score the best exactly (about 1.5x the "
        "queries/s at the same recall; 25% more memory). --no-quantize: a graph over the floats alone.",
    ),
    batch_size: int = BatchOption,
    device: str | None = DeviceOption,
    trust_remote_code: bool = TrustOption,
    runtime: str = RuntimeOption,
    overwrite: bool = typer.Option(False, "--overwrite", help="Replace an index bertkit wrote there before."),
) -> None:
    """Embed a corpus and index its vectors, with the model and its encoding settings, so that
    `bertkit search --index` encodes queries the same way. Hits are numbered by corpus line."""
    from functools import partial

    from bertkit.core.progress import console
    from bertkit.embeddings.index import build_index
    from bertkit.tasks.embed.encoder import load_encoder

    load = partial(load_encoder, model, pooling, None, max_length, device, trust_remote_code, runtime)
    params = Params(
        m=links, ef_construction=ef_construction, ef_search=ef_search, quantized=quantize, kind=kind, lists=lists,
        probes=probes,
    )  # fmt: skip
    info = build_index(load, model, corpus, output, text_column, batch_size, overwrite, params)
    console.print(f"indexed {info['count']:,} texts ({info['lines']:,} lines) in {output}: {info['ann']['kind']}")


@index_app.command("add")
def add(
    index: str = typer.Option(..., "--index", help="An index folder made by `bertkit index build`."),
    corpus: str = CorpusOption,
    text_column: str = TextColumnOption,
    batch_size: int = BatchOption,
    device: str | None = DeviceOption,
    trust_remote_code: bool = TrustOption,
    runtime: str = RuntimeOption,
) -> None:
    """Add a corpus's texts to an index, encoded by the index's own model and settings; their
    lines are numbered on after the lines already indexed."""
    from bertkit.core.progress import console
    from bertkit.embeddings.index import add_to_index

    info = add_to_index(index, corpus, text_column, batch_size, device, trust_remote_code, runtime)
    added = info["corpora"][-1]
    console.print(
        f"added {added['texts']:,} texts (lines {added['first']:,} to {info['lines'] - 1:,}); "
        f"{info['count']:,} texts in {index}"
    )

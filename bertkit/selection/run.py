"""`bertkit select`: a pool of unlabelled texts read, the ones the training data already holds
left out, each text scored by how unsure the bundle is of it, and the N picks written in the
pool's format with an empty label field, ready to label and append to the training data."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from bertkit.core.adapters.base import bundle_inputs
from bertkit.core.data import load_source
from bertkit.core.data.formats import detect_format
from bertkit.core.data.readers import located_records
from bertkit.core.data.records import blank
from bertkit.core.data_settings import DataSource
from bertkit.core.errors import BertkitError
from bertkit.core.inference import chunks
from bertkit.core.outputs import atomic_text, check_output_file
from bertkit.core.progress import bar, console
from bertkit.selection import strategies
from bertkit.selection.picks import write_picks
from bertkit.tasks import get_task
from bertkit.tasks.bundle import open_bundle
from bertkit.tasks.embed.encoder import Encoder, Settings

PICK_FORMATS = ("csv", "tsv", "jsonl")
TEXTS_PER_PASS = 256


@dataclass
class Selected:
    """What `select` picked and why: the picks (pool records with their place and uncertainty)
    and the counts of what was left out."""

    picks: list[dict] = field(default_factory=list)
    candidates: int = 0
    already_labelled: int = 0
    repeated: int = 0
    blank: int = 0
    excluded_files: list[str] = field(default_factory=list)


def _key(text: str) -> str:
    return " ".join(str(text).split())  # the same text however its spaces were written


def labelled_sources(info: dict, exclude: list[str]) -> tuple[list[DataSource], list[str]]:
    """The labelled data to leave out of the picks: what the bundle was trained, validated and
    tested on (bertkit.json's config, read as training read it) and the `exclude` files; also
    the configured ones not found here."""
    data = (info.get("config") or {}).get("data") or {}
    found, missing = [], []
    for role in ("train", "validation", "test"):
        if not isinstance(data.get(role), dict):
            continue
        source = DataSource.model_validate(data[role])
        local = [source.path] if source.path else list((source.files or {}).values())
        here = source.hub is not None or (local and all(Path(p).exists() for p in local))
        (found if here else missing).append(source if here else source.describe())
    for path in exclude:
        if not Path(path).exists():
            raise BertkitError(f"--exclude {path}: no such file")
        found.append(DataSource(path=path))
    return found, missing


def labelled_texts(part, sources: list[DataSource], info: dict) -> set[str]:
    """The texts of the labelled `sources`, as the task reads them (whitespace made single)."""
    column, label = _column(info), info.get("label_column") or "label"
    known: set[str] = set()
    for source in sources:
        try:
            records = load_source(source, column, label, info.get("text_join") or " ").to_list()
        except BertkitError as err:
            console.print(f"[yellow]warning:[/yellow] {source.describe()} could not be read ({err}); texts in it may "
                          "be picked")  # fmt: skip
            continue
        known |= {_key(t) for t in part.training_texts(records, info)}
    return known


def output_format(output: str, pool_format: str) -> str:
    suffix = Path(output).suffix.lower().lstrip(".")
    chosen = suffix if suffix in PICK_FORMATS else None
    if chosen is None and suffix == "":
        chosen = pool_format if pool_format in PICK_FORMATS else None
    if chosen is None:
        raise BertkitError(
            f"-o {output}: the picks need a label column, so they are written as CSV, TSV or JSON lines; "
            "name the file .csv, .tsv or .jsonl"
        )
    return chosen


def select(
    model: str,
    pool: str,
    output: str,
    n: int = 32,
    strategy: str = strategies.DEFAULT_STRATEGY,
    exclude: list[str] | None = None,
    seed: int = 0,
    batch_size: int = 32,
    input_format: str | None = None,
    overwrite: bool = False,
) -> Selected:
    if n < 1:
        raise BertkitError(f"-n {n}: pick at least one text")
    if strategy not in strategies.STRATEGIES:
        raise BertkitError(f"--strategy {strategy}: use one of {', '.join(strategies.STRATEGIES)}")
    check_output_file(output, pool, *(exclude or []), *bundle_inputs(model), replace=overwrite, example="picks.csv")
    pool_format = detect_format(pool, input_format)
    fmt = output_format(output, pool_format)
    bundle = open_bundle(model)
    task = get_task(bundle.task)
    if task.selection is None:
        raise BertkitError(
            f"bertkit select ranks texts by how unsure a classifier or tagger is of them; {model} is a "
            f"{bundle.task} model. Use a classify or ner model"
        )
    info, part = bundle.info, task.selection
    sources, missing = labelled_sources(info, exclude or [])
    for source in sources:
        if source.path and Path(source.path).resolve() == Path(pool).resolve():
            raise BertkitError(
                f"-i {pool} is labelled data of the model ({source.describe()}): its texts are labelled already. "
                "Give a pool of texts that have no labels yet"
            )
    for name in missing:
        console.print(
            f"[yellow]warning:[/yellow] the model's data {name} (bertkit.json's config) is not here, so texts in it "
            "may be picked; give it (or a copy) with --exclude"
        )
    known = labelled_texts(part, sources, info)
    found = Selected(excluded_files=[s.describe() for s in sources])
    records, texts, places = [], [], []
    seen: set[str] = set()
    for where, record in located_records(pool, pool_format, _column(info)):
        text = part.text(record, info, where)
        if blank(text):
            found.blank += 1
        elif _key(text) in known:
            found.already_labelled += 1
        elif _key(text) in seen:
            found.repeated += 1
        else:
            seen.add(_key(text))
            records.append(record)
            texts.append(text)
            places.append(where)
    found.candidates = len(texts)
    if not texts:
        raise BertkitError(f"{pool}: no text to pick from ({left_out(found)})")
    if n > len(texts):
        console.print(f"[yellow]warning:[/yellow] -n {n}: the pool has {len(texts):,} texts to pick from; all picked")
    with atomic_text(output) as handle:  # opened first: an output that cannot be written fails before any work
        tokenizer = bundle.load_tokenizer()
        network = bundle.load_model(task.auto_model)
        rows = []
        with bar("scoring the pool", len(texts)) as progress:
            for part_texts in chunks(texts, TEXTS_PER_PASS):
                rows += part.probability_rows(network, tokenizer, info, part_texts, batch_size)
                progress.advance(progress.task_ids[0], len(part_texts))
        uncertain = strategies.uncertainties(rows, strategy)
        vectors = None
        if strategy == strategies.CLUSTERED and n < len(texts):
            vectors = sentence_vectors(network, tokenizer, info, texts, batch_size, strategy)
        chosen = strategies.pick(uncertain, n, strategy, vectors, seed)
        label = part.label_field(info)
        picked = [{**records[i], label: None} for i in chosen]
        write_picks(handle, picked, fmt)
    found.picks = [
        {"rank": rank, "where": places[i], "text": texts[i], "uncertainty": round(float(uncertain[i]), 4)}
        for rank, i in enumerate(chosen, start=1)
    ]
    return found


def _column(info: dict) -> str:
    return info.get("text_column") or "text"


def left_out(found: Selected) -> str:
    return (
        f"{found.already_labelled:,} already in the labelled data, {found.repeated:,} repeated, "
        f"{found.blank:,} blank"
    )


def sentence_vectors(model, tokenizer, info: dict, texts: list[str], batch_size: int, strategy: str) -> np.ndarray:
    """Mean-pooled, unit-length vectors of the bundle's own encoder (the clusters of
    margin-clusters)."""
    base = getattr(model, "base_model", None)
    if getattr(model, "runtime", None) == "onnx" or base is None or base is model:
        raise BertkitError(
            f"--strategy {strategy} clusters the encoder's sentence vectors, which an exported (ONNX) model does "
            "not give; use the PyTorch bundle it was exported from, or --strategy margin"
        )
    settings = Settings("mean", True, int(info.get("max_length") or 512), "bundle")
    return Encoder(base, tokenizer, settings, "bundle", "").encode(texts, batch_size)


"""`bertkit select`: a pool of unlabelled texts read, the ones the model's labelled data already
holds left out, each text scored by how unsure the bundle is of it, and the N picks written in the
pool's format with an empty label field, ready to label and append to the training data."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from bertkit.core.adapters.base import bundle_inputs
from bertkit.core.data import load_source
from bertkit.core.data.formats import Layout, detect_format
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
ROLES = ("train", "validation", "test")


@dataclass
class SelectOptions:
    count: int = 32
    strategy: str = strategies.DEFAULT_STRATEGY
    exclude: list[str] = field(default_factory=list)
    seed: int = 0
    batch_size: int = 32
    input_format: str | None = None
    text_column: str | None = None  # the pool's text field (default: the one the model was trained on)
    encoding: str = "utf-8"
    overwrite: bool = False


@dataclass
class Selected:
    """What `select` picked and why: the picks (pool records with their place and uncertainty)
    and the counts of what was left out."""

    picks: list[dict] = field(default_factory=list)
    candidates: int = 0
    already_labelled: int = 0
    repeated: int = 0
    blank: int = 0
    labelled_data: list[str] = field(default_factory=list)


def labelled_sources(info: dict, exclude: list[str]) -> list[DataSource]:
    """The labelled data whose texts are never picked: what the bundle was trained, validated and
    tested on (bertkit.json's `labelled_data`, with absolute paths; for an older bundle its
    config's paths, as written) and the `exclude` files. A source of the model's that is not here
    is refused, unless --exclude names the labelled data where it is now."""
    recorded = info.get("labelled_data") or (info.get("config") or {}).get("data") or {}
    found, missing = [], []
    for role in ROLES:
        if not isinstance(recorded.get(role), dict):
            continue
        source = DataSource.model_validate(recorded[role])
        here = source.hub is not None or all(Path(p).exists() for p in source.local_paths())
        (found if here else missing).append(source)
    for path in exclude:
        if not Path(path).exists():
            raise BertkitError(f"--exclude {path}: no such file")
        found.append(DataSource(path=path))
    for source in missing:
        said = (
            f"the model's labelled data {source.describe()} (bertkit.json) is not here, so its texts could be picked"
        )
        if not exclude:
            raise BertkitError(f"{said}: give it, where it is now, with --exclude PATH (repeatable)")
        console.print(f"[yellow]warning:[/yellow] {said}; leaving out the --exclude files only")
    return found


def labelled_keys(part, sources: list[DataSource], info: dict, tokenizer) -> set[str]:
    """The texts of the labelled `sources` as the task reads them, each as its `key`."""
    column, label = info.get("text_column") or "text", info.get("label_column") or "label"
    known: set[str] = set()
    for source in sources:
        records = load_source(source, column, label, info.get("text_join") or " ").to_list()
        known |= {part.key(text, tokenizer) for text in part.training_texts(records, info)}
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


def select(model: str, pool: str, output: str, options: SelectOptions | None = None) -> Selected:
    options = options or SelectOptions()
    n, strategy = options.count, options.strategy
    if n < 1:
        raise BertkitError(f"-n {n}: pick at least one text")
    if strategy not in strategies.STRATEGIES:
        raise BertkitError(f"--strategy {strategy}: use one of {', '.join(strategies.STRATEGIES)}")
    bundle = open_bundle(model)
    task = get_task(bundle.task)
    if task.selection is None:
        raise BertkitError(
            f"bertkit select ranks texts by how unsure a classifier or tagger is of them; {model} is a "
            f"{bundle.task} model. Use a classify or ner model"
        )
    if strategy == strategies.CLUSTERED and bundle.runtime == "onnx":
        raise BertkitError(
            f"--strategy {strategy} clusters the encoder's sentence vectors, which an exported (ONNX) model does "
            "not give; use the PyTorch bundle it was exported from, or --strategy margin"
        )
    info = {**bundle.info, **({"text_column": options.text_column} if options.text_column else {})}
    part = task.selection
    sources = labelled_sources(info, options.exclude)
    labelled_files = [p for s in sources for p in s.local_paths()]
    for path in labelled_files:
        if Path(path).resolve() == Path(pool).resolve():
            raise BertkitError(
                f"-i {pool} is labelled data of the model ({path}): its texts are labelled already. "
                "Give a pool of texts that have no labels yet"
            )
    # never written over: the pool, the model, and the labelled data (a slip of -o train.csv)
    check_output_file(output, pool, *labelled_files, *bundle_inputs(model), replace=options.overwrite,
                      example="picks.csv")  # fmt: skip
    pool_format = detect_format(pool, options.input_format)
    fmt = output_format(output, pool_format)
    tokenizer = bundle.load_tokenizer()
    known = labelled_keys(part, sources, info, tokenizer)
    found = Selected(labelled_data=[s.describe() for s in sources])
    records, texts, places = [], [], []
    seen: set[str] = set()
    layout = Layout(encoding=options.encoding)
    for where, record in located_records(pool, pool_format, info.get("text_column") or "text", layout=layout):
        text = part.text(record, info, where)
        key = part.key(text, tokenizer) if not blank(text) else ""
        if not key:
            found.blank += 1
        elif key in known:
            found.already_labelled += 1
        elif key in seen:
            found.repeated += 1
        else:
            seen.add(key)
            records.append(record)
            texts.append(text)
            places.append(where)
    found.candidates = len(texts)
    if not texts:
        raise BertkitError(f"{pool}: no text to pick from ({left_out(found)})")
    if n > len(texts):
        console.print(f"[yellow]warning:[/yellow] -n {n}: the pool has {len(texts):,} texts to pick from; all picked")
    with atomic_text(output) as handle:  # opened first: an output that cannot be written fails before any work
        network = bundle.load_model(task.auto_model)
        rows = []
        with bar("scoring the pool", len(texts)) as progress:
            for part_texts in chunks(texts, TEXTS_PER_PASS):
                rows += part.probability_rows(network, tokenizer, info, part_texts, options.batch_size)
                progress.advance(progress.task_ids[0], len(part_texts))
        uncertain = strategies.uncertainties(rows, strategy)
        vectors = None
        if strategy == strategies.CLUSTERED and n < len(texts):
            vectors = sentence_vectors(network, tokenizer, info, texts, options.batch_size)
        chosen = strategies.pick(uncertain, n, strategy, vectors, options.seed)
        label = part.label_field(info)
        write_picks(handle, [{**records[i], label: None} for i in chosen], fmt)
    found.picks = [
        {"rank": rank, "where": places[i], "text": texts[i], "uncertainty": round(float(uncertain[i]), 4)}
        for rank, i in enumerate(chosen, start=1)
    ]
    return found


def left_out(found: Selected) -> str:
    return (
        f"{found.already_labelled:,} already in the labelled data, {found.repeated:,} repeated, "
        f"{found.blank:,} blank"
    )


def sentence_vectors(model, tokenizer, info: dict, texts: list[str], batch_size: int) -> np.ndarray:
    """Mean-pooled, unit-length vectors of the bundle's own encoder (the clusters of
    margin-clusters)."""
    settings = Settings("mean", True, int(info.get("max_length") or 512), "bundle")
    return Encoder(model.base_model, tokenizer, settings, "bundle", "").encode(texts, batch_size)

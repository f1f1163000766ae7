"""`bertkit compare`: several models (and optionally a TF-IDF baseline) scored on the same
labelled examples, with bootstrap intervals and paired tests; the report as report.md,
report.csv, report.json and report.png.

Each model's per-example results come from its task's `evaluate_examples`, whose `.score()` is
what `bertkit evaluate` reports, so a model's numbers here are its `bertkit evaluate` numbers.
"""

from __future__ import annotations

import dataclasses
import math
import re
import time
from dataclasses import dataclass, field
from pathlib import Path

from bertkit.comparison import baseline as baselines
from bertkit.comparison.bootstrap import interval, pair_tests, resample_all
from bertkit.comparison.report import write_report
from bertkit.core import outputs
from bertkit.core.adapters.base import adapter_of, bundle_inputs, find_base
from bertkit.core.errors import BertkitError
from bertkit.core.onnx_runtime import ONNX_FILE
from bertkit.core.progress import status
from bertkit.tasks import get_task
from bertkit.tasks.bundle import open_bundle
from bertkit.tasks.contract.options import EvaluateOptions

# the formats a model's weights come in, in the order they are read when a folder holds several
WEIGHT_FORMATS = (("*.onnx", "*.onnx_data"), ("*.safetensors",), ("pytorch_model*.bin",), ("tf_model.h5",),
                  ("flax_model.msgpack",))  # fmt: skip
KIND = "comparison"
# Examples scored untimed before each model's timed pass: enough to pay the one-off costs (imports,
# the file's first read, the first forward pass) that would otherwise all fall on the first model
# (measured: the first of two copies of one tiny model at 50 texts/s, the second at 1,600)
WARM_UP = 8


@dataclass
class Row:
    """One model of the table."""

    name: str
    path: str | None
    scored: object  # bertkit.tasks.contract.scored.Scored
    parameters: int | None
    size_bytes: int | None
    texts_per_second: float
    scores: dict = field(default_factory=dict)  # what `bertkit evaluate` reports
    note: str = ""
    base_size_bytes: int | None = None  # an adapter bundle: the weights of the base it runs on


@dataclass
class Comparison:
    task: str
    data: str
    metrics: list[str]
    rows: list[Row]
    intervals: dict  # {model: {metric: (low, high)}}
    pairs: list[dict]
    rounds: int
    seed: int
    examples: int
    bootstrap_seconds: float = 0.0

    def point(self, name: str, metric: str) -> float:
        return float(next(r for r in self.rows if r.name == name).scores[metric])


def default_output(data: str) -> Path:
    return Path(f"compare-{Path(data).name.split('.')[0] or 'data'}")


def weights_size(folder: Path) -> int:
    """Bytes of the weight files the model is read from (not the tokenizer, plots or card, nor a
    second copy of the weights in another format: a Hub clone of BERT holds four)."""
    for patterns in WEIGHT_FORMATS:
        files = [p for pattern in patterns for p in folder.glob(pattern) if p.is_file()]
        if files:
            return sum(p.stat().st_size for p in files)
    return 0


def open_all(models: list[str], trust_remote_code: bool) -> list:
    """The bundles, checked to be of one task (and, for classification, one problem and one
    label set), so that their numbers mean the same thing."""
    if len(set(models)) < len(models):
        twice = next(m for m in models if models.count(m) > 1)
        raise BertkitError(f"{twice} is given twice; compare different models")
    bundles = [open_bundle(m, trust_remote_code) for m in models]
    first = bundles[0]
    for other in bundles[1:]:
        if other.task != first.task:
            raise BertkitError(
                f"{first.path} is a {first.task} model but {other.path} is a {other.task} model; "
                "compare models of one task"
            )
        if first.task == "classify":
            for key in ("problem_type", "labels"):
                if other.info.get(key) != first.info.get(key):
                    raise BertkitError(
                        f"{first.path} and {other.path} differ in {key} ({first.info.get(key)} against "
                        f"{other.info.get(key)}); compare classifiers of the same labels"
                    )
    return bundles


def score_bundle(bundle, data: str, device, options: EvaluateOptions) -> Row:
    """One model's per-example results on `data`, its size and its speed: texts per second over
    the whole scoring pass (reading the file, tokenizing, forward passes, decoding; loading the
    model and a warm-up pass over a few examples excluded)."""
    task = get_task(bundle.task)
    tokenizer = bundle.load_tokenizer()
    network = bundle.load_model(task.auto_model, device)
    parameters = count_parameters(network)
    with status(f"scoring {data} with {bundle.path}"):
        warm = dataclasses.replace(options, max_samples=min(WARM_UP, options.max_samples or WARM_UP))
        task.evaluation.evaluate_examples(network, tokenizer, bundle.info, data, warm)
        start = time.perf_counter()
        scored = task.evaluation.evaluate_examples(network, tokenizer, bundle.info, data, options)
        seconds = time.perf_counter() - start
    del network
    row = Row(str(bundle.path), str(bundle.path), scored, parameters, weights_size(bundle.path),
              len(scored) / max(seconds, 1e-9))  # fmt: skip
    adapter = adapter_of(bundle.path)
    if adapter is not None:  # its own files are the adapter and head: the base's weights come on top
        row.base_size_bytes = weights_size(Path(find_base(bundle.path, adapter)))
        row.note = f"an adapter of {adapter.get('base_model')}: size is its own files, the base's weights come on top"
    return row


def count_parameters(network) -> int | None:
    """The model's parameters; for an ONNX bundle the numbers in its graph's initializers (None
    where the `onnx` package, which reads them, is not installed)."""
    if hasattr(network, "parameters"):
        return sum(p.numel() for p in network.parameters())
    try:
        import onnx
    except ImportError:
        return None

    graph = onnx.load(str(network.path / ONNX_FILE), load_external_data=False).graph
    return sum(int(math.prod(tensor.dims)) for tensor in graph.initializer)


def check_paired(rows: list[Row], data: str) -> None:
    """Every model must have been scored on the same examples with the same gold answers."""
    first = rows[0]
    for other in rows[1:]:
        if len(other.scored) != len(first.scored) or other.scored.references() != first.scored.references():
            raise BertkitError(
                f"{first.name} and {other.name} read different examples from {data} ({len(first.scored)} "
                f"against {len(other.scored)}, or other labels): they were trained on different columns. "
                "Name them with --text-column / --label-column"
            )


def compare_models(
    models: list[str],
    data: str,
    output: str | None = None,
    overwrite: bool = False,
    baseline: str | None = None,
    baseline_train: str | None = None,
    rounds: int = 1000,
    seed: int = 0,
    device: str | None = None,
    trust_remote_code: bool = False,
    options: EvaluateOptions | None = None,
    in_place: bool = False,
) -> tuple[Comparison, Path]:
    """Score every model in `models` (and the baseline) on `data`, bootstrap, test every pair and
    write the report into `output` (staged and published in one step; `in_place`: written file by
    file into a folder that holds other bertkit outputs, as after `compare --config`)."""

    options = options or EvaluateOptions()
    if not models:
        raise BertkitError("give the models to compare (bundle folders), or --config with --model NAME")
    if len(models) + (1 if baseline else 0) < 2:
        raise BertkitError("give two or more models, or one with --baseline tfidf")
    if baseline_train and not baseline:
        raise BertkitError("--baseline-train is the baseline's training data; give --baseline tfidf with it")
    bundles = open_all(models, trust_remote_code)
    task = bundles[0].task
    if baseline:
        baselines.check_baseline(baseline, task, bundles[0].info)
    target = Path(output) if output else default_output(data)
    # an adapter bundle's base is read too: a report inside it would change the base every adapter of it needs
    protect = [data, *(p for m in models for p in bundle_inputs(m)), *([baseline_train] if baseline_train else [])]
    if not in_place:  # `compare --config` checked its folder before training into it
        outputs.check_output_dir(target, overwrite, protect, KIND)
    if options.data_format is None:  # told once (and said once), not at each model's warm-up and scoring
        options = dataclasses.replace(options, data_format=get_task(task).evaluation.data_format(options.source(data)))
    rows = [score_bundle(b, data, device, options) for b in bundles]
    if baseline:
        with status(f"training the {baseline} baseline"):
            scored, parameters, speed, seen = baselines.fit_and_score(bundles[0], data, baseline_train, options)
        note = f"trained on {seen} examples"
        rows.append(Row(baselines.NAME, None, scored, parameters, None, speed, note=note))
    check_paired(rows, data)
    comparison = summarise(task, data, rows, rounds, seed)
    if in_place:
        write_report(comparison, target)
        outputs.write_manifest(target, KIND)
    else:
        with outputs.staged_dir(target, overwrite, KIND, protect) as staged:
            write_report(comparison, staged)
    return comparison, target


def summarise(task: str, data: str, rows: list[Row], rounds: int, seed: int) -> Comparison:
    """Point scores, bootstrap intervals and the pairwise tests."""

    metrics = list(rows[0].scored.metrics)
    for row in rows:
        row.scores = row.scored.score()
        undefined = [m for m in metrics if not math.isfinite(float(row.scores[m]))]
        if undefined:  # a NaN cannot be ranked: it is neither better nor worse than a number
            raise BertkitError(
                f"{row.path or row.name}: its {', '.join(undefined)} on {data} is not a number "
                f"({float(row.scores[undefined[0]])}), so it cannot be compared: its outputs are not finite. "
                "Leave it out, or train it again."
            )
    scored = {r.name: r.scored for r in rows}
    with status(f"bootstrap: {rounds} resamples of {len(rows[0].scored)} examples"):
        start = time.perf_counter()
        resampled = resample_all(scored, rounds, seed)
        spent = time.perf_counter() - start
    intervals = {name: {m: interval(v) for m, v in values.items()} for name, values in resampled.items()}
    points = {r.name: {m: float(r.scores[m]) for m in metrics} for r in rows}
    pairs = pair_tests([r.name for r in rows], scored, points, resampled, metrics)
    return Comparison(task, data, metrics, rows, intervals, pairs, rounds, seed, len(rows[0].scored), spent)


def model_dir_name(name: str) -> str:
    """A folder name for a model name or path (`sentence-transformers/all-MiniLM-L6-v2` ->
    `all-MiniLM-L6-v2`)."""
    tail = name.rstrip("/").split("/")[-1] or name
    return re.sub(r"[^A-Za-z0-9._-]+", "-", tail).strip("-.") or "model"

"""Smoke runs: a user's own config, end to end in seconds, on a tiny model.

The config is read as `bertkit train` reads it, with the model replaced by a tiny random one of
the same family (`tiny_models.build_tiny`: the model's config and tokenizer, never its weights), a
seeded sample of each split, and a few steps, all in a temporary folder: nothing is written to the
config's `output_dir`. Every stage takes the path the real run would take (readers, columns,
labels, windows, metrics, the bundle), so what would stop the real run stops the smoke run, with
the same message. It does not measure quality.

Stages: read (the config, the tiny model, the splits as training reads them), train, evaluate (the
bundle on a sample of the test or validation file, through `bertkit evaluate`), predict (a few
records of that file through `bertkit predict`'s reader), reload (the bundle opened again, as
`predict` and `transformers.AutoModel*` would) and export (skipped: this version has no export).
"""

from __future__ import annotations

import re
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from bertkit import training
from bertkit.config import DataSource
from bertkit.core import models
from bertkit.core.data.formats import Layout, detect_format
from bertkit.core.data.readers import located_records
from bertkit.core.data.records import placed
from bertkit.core.errors import BertkitError
from bertkit.core.extras import install_command
from bertkit.core.run_info import RunInfo
from bertkit.core.tokenization import load_tokenizer
from bertkit.evaluation import evaluate_file
from bertkit.exporting.onnx import export_bundle
from bertkit.prediction import predict_file
from bertkit.tasks import get_task
from bertkit.tasks.bundle import open_bundle
from bertkit.tasks.contract.options import EvaluateOptions, PredictOptions
from bertkit.tasks.embed.settings import EmbedConfig
from bertkit.tasks.mlm.settings import MlmConfig
from bertkit.tiny_models import build_tiny
from bertkit.training.run import run_tokenizer, starting_model

STAGES = ("read", "train", "evaluate", "predict", "reload", "export")
TRAIN_SAMPLES, EVAL_SAMPLES, PREDICT_RECORDS, STEPS = 32, 16, 4, 2


@dataclass
class Stage:
    name: str
    status: str = "skipped"  # passed, failed or skipped
    seconds: float = 0.0
    detail: str = ""


class Skipped(Exception):
    """A stage that has nothing to run on: the message says why."""


class SmokeFailed(BertkitError):
    """A stage failed: the message is the stage's, the stages say how far the run got."""

    def __init__(self, message: str, stages: list[Stage]):
        super().__init__(message)
        self.stages = stages


def smoke_overrides(cfg, tiny: Path | None, folder: Path) -> list[str]:
    """The `--set`s that turn `cfg` into its smoke run."""
    sets = [
        f"data.max_train_samples={TRAIN_SAMPLES}",
        f"data.max_eval_samples={EVAL_SAMPLES}",
        f"train.max_steps={STEPS}",
        f"train.batch_size={min(cfg.train.batch_size, 8)}",
        f"train.eval_batch_size={EVAL_SAMPLES}",
        "train.gradient_accumulation_steps=1",
        "train.logging_steps=1",
        "train.eval_steps=1",
        "train.early_stopping_patience=null",
        "train.report_to=[]",
        "train.dataloader_workers=0",
        f"output_dir={folder / 'bundle'}",
        "data.cache=false",  # a smoke run leaves nothing behind, cached features included
    ]
    if cfg.data.streaming:  # a stream's sample can only be its first texts
        sets.append("data.sample=first")
    if tiny is not None:
        sets.append(f"model.name={tiny}")
    else:  # a model pre-trained from scratch: the same recipe, small
        sets += [
            "mlm.hidden_size=64",
            "mlm.num_layers=2",
            "mlm.num_heads=2",
            "mlm.intermediate_size=128",
            f"mlm.vocab_size={min(cfg.section(MlmConfig).vocab_size, 400)}",
        ]
    return sets


def run_smoke(load, config: Path, stages: tuple[str, ...] = STAGES) -> list[Stage]:
    """The smoke run of the config at `config` (see the module); raises `SmokeFailed` at the first
    failing stage. `load(extra_sets)` reads that config (as the command was asked to, plus the
    given `--set`s): the command builds configs, this module only asks for them."""
    done = [Stage(name) for name in STAGES]
    by_name = {stage.name: stage for stage in done}
    with tempfile.TemporaryDirectory(prefix="bertkit-smoke-") as scratch:
        folder = Path(scratch)
        state: dict = {}
        for name in STAGES:
            stage = by_name[name]
            if name not in stages:
                stage.detail = "not asked for"
                continue
            started = time.perf_counter()
            try:
                stage.detail = STEPS_OF[name](load, config, folder, state)
                stage.status = "passed"
            except Skipped as why:
                stage.detail = str(why)
            except BertkitError as err:
                stage.status, stage.detail = "failed", str(err)
                stage.seconds = round(time.perf_counter() - started, 2)
                for later in done[done.index(stage) + 1 :]:
                    later.detail = f"not reached: {name} failed"
                raise SmokeFailed(f"smoke stage '{name}' failed: {err}", done) from None
            stage.seconds = round(time.perf_counter() - started, 2)
    return done


def _read(load, config: Path, folder: Path, state: dict) -> str:

    cfg = load([])
    sets: list[str] = []
    job = get_task(cfg.task)
    tiny = tokenizer = source = None
    if not job.training.starts_from_scratch(cfg):
        # the real model's positions bound model.max_length, as the real run checks them (its config only)
        source = models.resolve(cfg.model.name, cfg.model.revision)
        models.check_max_length(source, cfg, job.training.lengths(cfg))
        built = build_tiny(cfg.model.name, folder / "tiny")
        tiny = built.path
        sets = [*sets, *_within(cfg, built.positions)]
        tokenizer = load_tokenizer(str(tiny))
    # every split read whole and checked as the real run checks it: labels and tags come from the
    # whole training data, and a label of the test data that training never sees stops here
    whole = job.training.load(cfg)
    info = RunInfo(job.training.setup(whole, cfg))
    if tokenizer is not None:
        job.inspection.checks(whole, tokenizer, info, cfg)
    loaded = _load_real_model(cfg, job, whole, info, source) if source is not None else ""
    smoke_cfg = load([*sets, *smoke_overrides(cfg, tiny, folder), *_as_whole(cfg, info)])
    state.update(cfg=cfg, smoke_cfg=smoke_cfg, task=job)
    # a streamed training split (data.streaming) is not read whole: it has no length to show
    sizes = ", ".join(
        f"{role} {len(split):,}" if hasattr(split, "__len__") else f"{role} streamed" for role, split in whole.items()
    )
    origin = f"a tiny model of {cfg.model.name}" if tiny else "pre-trained from scratch, small"
    return f"{cfg.task}, {origin}; {sizes} read and checked{loaded}"


def _load_real_model(cfg, job, whole, info, source: str) -> str:
    """The real tokenizer and model loaded as the real run loads them (`training.run`'s own
    functions), then dropped: a truncated weights file, a broken tokenizer or config, weights that
    are not finite stop the smoke run with the real run's message. A Hub model whose weights are
    not downloaded is not fetched for this (a smoke run fetches configs and tokenizers only)."""

    tokenizer = run_tokenizer(cfg, job, whole, source)
    facts = job.training.tokenizer_facts(tokenizer, info)
    if not _weights_at_hand(source, cfg.model.revision):
        return f"; the weights of {cfg.model.name} are not downloaded, so not loaded"
    model = starting_model(cfg, job, source, info.replace(**facts) if facts else info)
    del model
    return f"; {cfg.model.name} loads as the run loads it"


def _weights_at_hand(source: str, revision: str | None) -> bool:
    """Whether the model's weights are on this machine: a local folder (whose missing weights are
    the run's error too), or a Hub model whose weights are in the cache."""
    if Path(source).is_dir():
        return True
    from huggingface_hub import try_to_load_from_cache

    names = ("model.safetensors", "model.safetensors.index.json", "pytorch_model.bin", "pytorch_model.bin.index.json")
    return any(isinstance(try_to_load_from_cache(source, n, revision=revision), str) for n in names)


def _within(cfg, positions: int | None) -> list[str]:
    """Lengths cut to the tiny model's positions (only a model longer than 512 positions has longer
    ones that fit it: the real model's limit is checked before)."""
    if positions is None:
        return []
    lengths = get_task(cfg.task).training.lengths(cfg)
    return [f"{key}={positions}" for key, value in lengths.items() if value > positions]


def _as_whole(cfg, info) -> list[str]:
    """The sample trained on knows what the whole training data gives: its problem type and every
    label or tag, even one the 32 sampled examples lack (the real run knows them all)."""
    import json

    sets = []
    problem = info.get("problem_type")
    if problem and cfg.task == "classify":
        sets.append(f"classify.problem_type={problem}")
        # the route the whole data takes: a sample of a few dozen examples would take the few-shot one
        sets.append(f"classify.strategy={info['strategy']}")
    if info.get("labels") and not cfg.data.labels and problem != "regression" and cfg.task in ("classify", "ner"):
        sets.append(f"data.labels={json.dumps(list(info['labels']))}")
    if info.get("score_max") and not getattr(cfg.section(EmbedConfig), "score_max", None):
        sets.append(f"embed.score_max={info['score_max']}")  # scores scaled as the whole data scales them
    return sets


def _train(load, config: Path, folder: Path, state: dict) -> str:

    final, scores = training.train(state["smoke_cfg"], protect=[config])
    state["bundle"] = final
    headline = {k: v for k, v in scores.items() if isinstance(v, float)}
    shown = ", ".join(f"{k} {v:.3g}" for k, v in list(headline.items())[:2])
    return f"{STEPS} steps{'; ' + shown if shown else ''}"


def _scored_source(cfg):
    """The split `evaluate` and `predict` read: test, else validation, else train, when it is one
    local file (data from the Hub, or one file per label, is not one labelled file)."""
    for role in ("test", "validation", "train"):
        source = getattr(cfg.data, role)
        if source is not None and source.path and not source.hub:
            return role, source
    raise Skipped("no split is one local file (`files:` or the Hub): `bertkit evaluate` reads one labelled file")


def _predicted_source(cfg):
    """The file `predict` reads: the scored one, else the first file of a `files:` source, a text
    file as a user's predict input would be."""

    try:
        return _scored_source(cfg)
    except Skipped:
        for role in ("test", "validation", "train"):
            source = getattr(cfg.data, role)
            if source is not None and source.files:
                label, path = next(iter(source.files.items()))
                return f"'{label}' file of the {role}", DataSource(path=path, encoding=source.encoding)
        raise Skipped("the data comes from the Hub: no local file to predict on") from None


def _evaluate(load, config: Path, folder: Path, state: dict) -> str:

    role, source = _scored_source(state["cfg"])
    options = EvaluateOptions(
        data_format=source.format,
        columns=tuple(source.columns) if source.columns else None,
        encoding=source.encoding or "utf-8",
        max_samples=EVAL_SAMPLES,
    )
    scores, _ = evaluate_file(str(state["bundle"]), source.path, str(folder / "evaluation"), options=options)
    return f"{role} data, {EVAL_SAMPLES} examples"


def _predict(load, config: Path, folder: Path, state: dict) -> str:
    from itertools import islice


    role, source = _predicted_source(state["cfg"])
    if source.path == "-":
        raise Skipped("the data is read from standard input")
    data = state["cfg"].data
    fmt = detect_format(source.path, source.format)
    layout = Layout.of(source)
    located = located_records(
        source.path, fmt, data.text_column, keep_blank=True, layout=layout, text_join=data.text_join
    )
    records = [placed(where, record) for where, record in islice(located, PREDICT_RECORDS)]
    if state["cfg"].task == "mlm-adapt":
        records = [_masked(record, data.text_column) for record in records]
    options = PredictOptions(columns=layout.columns, encoding=layout.encoding)
    count = predict_file(
        str(state["bundle"]), source.path, str(folder / "predictions.jsonl"), records=records, options=options
    )
    return f"{count} records of the {role} data"


def _masked(record, column: str):
    """A fill-mask input: the start of the record's text (a long document would put the mask past
    the model's limit) with its second word masked, or for text without spaces (Japanese) the
    middle character (a text without [MASK] has nothing to fill)."""
    text = str(record.get(column) or "")[:100]
    words = text.split()
    if len(words) > 1:
        words[1] = "[MASK]"
        text = " ".join(words)
    elif text:
        middle = len(text) // 2
        text = text[:middle] + "[MASK]" + text[middle + 1 :]
    record[column] = text
    return record


def _reload(load, config: Path, folder: Path, state: dict) -> str:

    bundle = open_bundle(str(state["bundle"]))
    bundle.load_tokenizer()
    bundle.load_model(state["task"].auto_model, "cpu")
    return f"{bundle.task} bundle loads ({state['task'].auto_model})"


def _export(load, config: Path, folder: Path, state: dict) -> str:
    """`bertkit export --format onnx` of the bundle, with its own check against PyTorch."""
    from importlib.util import find_spec


    if find_spec("onnxruntime") is None or find_spec("onnx") is None:
        raise Skipped(f"the onnx extra is not installed ({install_command('onnx')})")

    _, record = export_bundle(str(state["bundle"]), output=str(folder / "onnx"))
    fp32 = record["check"]["fp32"]
    return f"ONNX fp32, max |diff| from PyTorch {fp32['max_abs_diff']:.1e} on {fp32['texts']} texts"


STEPS_OF = {
    "read": _read,
    "train": _train,
    "evaluate": _evaluate,
    "predict": _predict,
    "reload": _reload,
    "export": _export,
}


# What XML 1.0 cannot hold at all, even escaped: control characters other than tab, line feed and
# carriage return, lone surrogates, U+FFFE and U+FFFF. A message quoting a bad line of data can hold
# them; written raw, they make the whole report unreadable (CI then shows no failure at all).
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")


def xml_safe(text: str) -> str:
    """`text` with each character XML cannot hold written as its Python escape (`\\x07`)."""
    return _NOT_XML.sub(lambda m: m.group().encode("unicode_escape").decode("ascii"), str(text))


def junit_xml(stages: list[Stage], config: Path) -> str:
    """A JUnit report: one test case per stage, as CI systems show them; every text made XML-safe."""
    from xml.etree import ElementTree as ET

    failures = sum(stage.status == "failed" for stage in stages)
    skipped = sum(stage.status == "skipped" for stage in stages)
    suite = ET.Element(
        "testsuite",
        name=xml_safe(f"bertkit smoke {config}"),
        tests=str(len(stages)),
        failures=str(failures),
        skipped=str(skipped),
        time=f"{sum(stage.seconds for stage in stages):.2f}",
    )
    for stage in stages:
        classname = xml_safe(f"bertkit.smoke.{Path(config).stem}")
        case = ET.SubElement(suite, "testcase", classname=classname, name=stage.name)
        case.set("time", f"{stage.seconds:.2f}")
        detail = xml_safe(stage.detail)
        if stage.status == "failed":
            ET.SubElement(case, "failure", message=detail[:200]).text = detail
        elif stage.status == "skipped":
            ET.SubElement(case, "skipped", message=detail)
    suites = ET.Element("testsuites")
    suites.append(suite)
    ET.indent(suites)
    return '<?xml version="1.0" encoding="utf-8"?>\n' + ET.tostring(suites, encoding="unicode") + "\n"

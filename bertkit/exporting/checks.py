"""The checks an export runs on itself before it is published.

fp32: the ONNX graph's outputs against the PyTorch model's on the same texts (padded batches of
mixed lengths): every output within `TOLERANCE` × (1 + the largest PyTorch value), else the
export fails. int8: on a sample of the bundle's own data, the share of records whose prediction
is the same as fp32's (label, entities, answer; cosine for embeddings) and the main metric of
both, with a warning when int8 loses more than half a point. A check that cannot run on its data
is an error, never a note.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from bertkit.config import DataSource
from bertkit.core.data.formats import detect_format
from bertkit.core.data.readers import located_records, placed
from bertkit.core.errors import BertkitError
from bertkit.exporting.calibration import evaluate_on_check_data
from bertkit.prediction import aligned
from bertkit.tasks.contract.options import PredictOptions

TOLERANCE = 1e-4
# records of the check data the int8 check compares (the first ones) and scores (a seeded sample):
# with 200, one text was half a point and the --min-agreement floor of 0.99 two texts, and an int8
# graph at 98.9 % on SST-2 dev's 872 passed at 99.5 % on its first 200 (docs/deployment.md)
SAMPLE = 1000
MAX_LOSS = 0.005  # half a point of a metric between 0 and 1 (0.5 % of a perplexity)
BUILT_IN = [
    "The film was a delight from start to finish.",
    "I would not stay at this hotel again: the room was dirty and the staff rude.",
    "Paris is the capital of France.",
    "The battery lasts two days, but the screen scratches easily.",
    "What a waste of an evening.",
    "Marie Curie won the Nobel Prize in 1903 and again in 1911, the first person to win it twice.",
]
HIGHER_IS_BETTER_NOT = ("perplexity", "loss", "mse", "rmse", "mae")


@dataclass
class Report:
    """What the checks found, as bertkit.json's `export.check` records it."""

    max_abs_diff: float = 0.0
    allowed: float = 0.0
    texts: int = 0
    data: str | None = None
    data_role: str | None = None  # "given" (--check-data), or the bundle's "validation", "test" or "train" file
    int8: dict = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    def as_dict(self) -> dict:
        fp32 = {"max_abs_diff": self.max_abs_diff, "allowed": self.allowed, "tolerance": TOLERANCE, "texts": self.texts}
        where = {"data": self.data, "data_role": self.data_role}
        return {"fp32": fp32, **where, **({"int8": self.int8} if self.int8 else {}), "notes": self.notes}


def check_fp32(graph, onnx_model, tokenizer, texts: list[str], names: list[str], report: Report) -> None:
    """Fail unless the ONNX graph gives what `graph` (the PyTorch module it was exported from)
    gives on `texts`, in padded batches of mixed lengths (per-token outputs compared on real tokens),
    and on pairs of them (the second segment: a pair's second text, QA's context)."""
    import torch

    worst, largest = 0.0, 0.0
    pairs = list(zip(texts, texts[1:] + texts[:1], strict=True))
    batches = [(texts[s : s + 4],) for s in range(0, len(texts), 4)]
    batches += [tuple(map(list, zip(*pairs[s : s + 4], strict=True))) for s in range(0, len(pairs), 4)]
    for batch in batches:
        padded = tokenizer(*batch, padding=True, truncation=True, max_length=64, return_tensors="np")
        feed = {n: padded[n] for n in names}
        mine = vars(onnx_model(**feed))
        with torch.no_grad():
            theirs = graph(*(torch.as_tensor(feed[n]) for n in names))
        theirs = theirs if isinstance(theirs, tuple) else (theirs,)
        real = feed["attention_mask"].astype(bool)
        for name, expected in zip(onnx_model.output_names, theirs, strict=True):
            got, expected = mine[name], expected.float().numpy()
            if got.ndim >= 2 and got.shape[:2] == real.shape:  # per token: padding positions are not read
                got, expected = got[real], expected[real]
            worst = max(worst, float(np.abs(got - expected).max()))
            largest = max(largest, float(np.abs(expected).max()))
    report.max_abs_diff, report.allowed, report.texts = worst, TOLERANCE * (1 + largest), len(texts) + len(pairs)
    if not worst <= report.allowed:
        raise BertkitError(
            f"the ONNX graph's outputs differ from the PyTorch model's by up to {worst:.3g} (allowed "
            f"{report.allowed:.3g}); the export is not kept. Please report this with the model's config.json."
        )


def check_format(task, data: Path | None, given: bool = False) -> str | None:
    """The check data's format as the task reads it, told once for every check that reads the
    file (each telling it again said "read as ..." again). Data the user gave whose format cannot
    be told is an error."""

    if data is None:
        return None
    try:
        return task.evaluation.data_format(DataSource(path=str(data)))
    except BertkitError as err:
        if given:
            raise BertkitError(f"--check-data {data}: cannot check the export on it ({err})") from None
        return None


def check_texts(task, info, data: Path | None, fmt: str | None, given: bool = False) -> list[str]:
    """Texts for the fp32 check: the built-in ones (plain sentences of several lengths) and up to
    ten of the check data's (in format `fmt`), when it holds text records (as the task's export part
    reads them). Data the user gave (`given`, --check-data) that gives no text is an error: the check
    asked for cannot run."""
    from itertools import islice


    texts = list(BUILT_IN)
    if data is not None and fmt is not None:
        column = info.get("text_column") or "text"
        try:
            located = located_records(str(data), fmt, column, keep_blank=False)
            records = [r for _, r in islice(located, 10)]
            found = task.export.check_texts(records, column)
        except (BertkitError, KeyError) as err:
            if given:
                raise BertkitError(f"--check-data {data}: cannot check the export on it ({_reason(err)})") from None
            found = []
        if given and not found:
            raise BertkitError(
                f"--check-data {data}: no record with a {column!r} text to check the export on; give a file in the "
                "format the bundle was trained on"
            )
        texts += found
    return texts


def _reason(err: Exception) -> str:
    return str(err.args[0]) if isinstance(err, KeyError) and err.args else str(err)


def compare_int8(task, fp32, int8, tokenizer, info, data: Path, fmt: str | None, report: Report) -> None:
    """Share of equal predictions and the main metric, fp32 ONNX against int8 ONNX; data on which
    either cannot be computed is an error (exit 2): the export is not kept unchecked."""

    agree = _agreement(task, fp32, int8, tokenizer, info, data, fmt)
    if agree is not None:
        report.int8.update(agree)
    metric = info.get("metric_for_best_model") or task.training.best_metric(info)
    before = evaluate_on_check_data(task, fp32, tokenizer, info, data, fmt, SAMPLE, "check")
    after = evaluate_on_check_data(task, int8, tokenizer, info, data, fmt, SAMPLE, "check")
    if not isinstance(before.get(metric), int | float):
        raise BertkitError(
            f"the int8 check cannot compare {metric} (the bundle's main metric): {data} gives no {metric} score"
        )
    loss = before[metric] - after[metric]
    relative = any(word in metric for word in HIGHER_IS_BETTER_NOT)
    if relative:
        loss = -loss / max(abs(before[metric]), 1e-12)  # relative, for a metric without a ceiling
    else:
        loss /= task.export.metric_scale  # as a share, like every other metric's: half a point is 0.005
    report.int8.update({"metric": metric, "fp32": before[metric], "int8": after[metric], "loss": loss})
    if loss > MAX_LOSS:
        cost = f"{loss:.2%} of {metric}" if relative else f"{loss * 100:.2f} points of {metric}"
        limit = "0.5 %" if relative else "half a point"
        report.notes.append(f"warning: int8 costs {cost} on {data} (more than {limit}); consider the fp32 export")


def _agreement(task, fp32, int8, tokenizer, info, data: Path, fmt: str | None) -> dict | None:
    from itertools import islice


    if not task.export.compares_predictions:
        return None  # e.g. mlm-adapt: its records need a [MASK]; the metric (perplexity) is the check
    options = PredictOptions()
    column = options.text_field(info)
    try:
        fmt = fmt or detect_format(str(data), None)
        located = located_records(str(data), fmt, column, keep_blank=False, text_join=options.text_join(info))
        records = [placed(where, record) for where, record in islice(located, SAMPLE)]
        shape = fmt if fmt in ("conll", "squad") else "jsonl"
        options = PredictOptions(text_column=column, output_format=shape, keep_gold=False)  # predictions alone
        first = list(aligned(task, fp32, tokenizer, info, records, options))
        second = list(aligned(task, int8, tokenizer, info, records, options))
    except BertkitError as err:
        raise BertkitError(f"the int8 check cannot compare predictions on {data}: {err}") from None
    return task.export.agreement(first, second)

"""`bertkit explain`: load a bundle, read one text as its task does, attribute the task's scores to
the text's tokens and words, and write the result (JSON, HTML, PNG)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from bertkit.core.adapters.base import bundle_inputs
from bertkit.core.errors import BertkitError
from bertkit.core.outputs import atomic_path, atomic_text, check_output_file, json_line
from bertkit.explain import render
from bertkit.explain.attribution import integrated_gradients, occlusion
from bertkit.explain.render import explanations
from bertkit.tasks import get_task
from bertkit.tasks.bundle import open_bundle
from bertkit.tasks.explain_inputs import BASELINES
from bertkit.tasks.registry import names

METHODS = ("integrated-gradients", "occlusion")
# Gauss-Legendre points on the path (bench/explain_faithfulness.py, MiniLM on 200 SST-2 dev
# sentences): 16 keep 86% of them within the tolerance, 32 all (largest error 0.0014), 64 all with
# the largest error 0.00001, a margin for longer texts and sharper models
DEFAULT_STEPS = 64
# completeness holds when
# |sum of attributions - (score - baseline_score)| <= TOLERANCE * max(1, |score - baseline_score|)
TOLERANCE = 0.01
PICTURES = (".html", ".htm", ".png")

def completeness_error(attributions: np.ndarray, score: float, baseline_score: float) -> float:
    return float(attributions.sum() - (score - baseline_score))


def within_tolerance(error: float, score: float, baseline_score: float) -> bool:
    return abs(error) <= TOLERANCE * max(1.0, abs(score - baseline_score))


def attribute(
    model, tokenizer, encoded, targets, method: str, steps: int, baseline: str, batch_size: int
) -> list[dict]:
    """One explanation per target: token and word attributions, the score at the input and at the
    baseline, and (integrated gradients) the completeness error."""

    if not targets:
        return []
    inputs = encoded.tensors(model.device)
    baseline_ids = encoded.baseline_ids(tokenizer, baseline, model.device)
    if method == "integrated-gradients":
        found, scores, baseline_scores = integrated_gradients(model, inputs, baseline_ids, targets, steps, batch_size)
    else:
        found, scores, baseline_scores = occlusion(model, inputs, baseline_ids, targets, encoded.groups(), batch_size)
    out = []
    for target, row, score, base in zip(targets, found, scores, baseline_scores, strict=True):
        error = completeness_error(row, score, base) if method == "integrated-gradients" else None
        words = [float(row[w.positions].sum()) if w.positions else 0.0 for w in encoded.words]
        out.append(
            {
                "target": target.name,
                **target.extra,
                "score": _short(score),
                "baseline_score": _short(base),
                "completeness_error": None if error is None else _short(error),
                "attributions": [_short(v) for v in row],
                "word_attributions": [_short(v) for v in words],
            }
        )
    return out


def _short(value) -> float:
    """Six significant digits: enough to check completeness from the JSON at any scale."""
    return float(f"{float(value):.6g}")


@dataclass(frozen=True)
class Explanation:
    """What one `bertkit explain` asks: the input (a text; a pair's second text, or a question whose
    context the text is), the score to explain (`target`: a label or entity, else the prediction's),
    and how (the method, its steps, the baseline, the batch size)."""

    text: str
    pair: str | None = None
    question: str | None = None
    target: str | None = None
    method: str = "integrated-gradients"
    steps: int = DEFAULT_STEPS
    baseline: str = "pad"
    batch_size: int = 16

    def check(self) -> None:
        """What can be told wrong before any file is read."""
        if not self.text.strip():
            raise BertkitError("--text is empty: give the text to explain")
        if self.pair is not None and not self.pair.strip():
            raise BertkitError("--text-pair is empty: give the second text, or leave --text-pair out")
        if self.method not in METHODS:
            raise BertkitError(f"--method {self.method}: choose {' or '.join(METHODS)}")
        if self.baseline not in BASELINES:
            raise BertkitError(f"--baseline {self.baseline}: choose {' or '.join(BASELINES)}")
        if self.steps < 1 or self.batch_size < 1:
            raise BertkitError("--steps and --batch-size must be at least 1")


def explain(model, tokenizer, info: dict, asked: Explanation) -> dict:
    """The explanation of a loaded model's prediction on one text, as the JSON `--json` writes."""
    task = info["task"]
    explainer = _explainer(task)
    info, encoded = explainer.encode(tokenizer, asked.text, asked.pair, asked.question, info)
    plan = explainer.plan(model, info, encoded, asked.target)
    explained = attribute(
        model, tokenizer, encoded, plan.targets, asked.method, asked.steps, asked.baseline, asked.batch_size
    )
    result = {"task": task, "method": asked.method, "baseline": asked.baseline}
    if asked.method == "integrated-gradients":
        result.update(steps=asked.steps, tolerance=TOLERANCE)
    result.update(dict(zip(encoded.parts, encoded.texts, strict=True)))
    result["score_kind"] = plan.score_kind
    result.update(plan.summary)
    result["tokens"] = encoded.tokens
    result["words"] = [
        {"text": w.text, "start": w.start, "end": w.end, "part": encoded.parts[w.part], "tokens": w.positions}
        for w in encoded.words
    ]
    result.update(explainer.lay_out(explained))
    return result


def _explainer(task: str):
    """The task's `Explainer` (bertkit/tasks/<task>/explaining.py), or an error saying why it has none."""

    found = get_task(task).explainer
    if found is None:
        reason = get_task(task).explain_refusal or f"a {task} model gives no label or span to explain"
        works_on = [name for name in names() if get_task(name).explainer is not None]
        raise BertkitError(f"--model: {reason}; explain works on {', '.join(works_on[:-1])} and {works_on[-1]} models")
    return found


def incomplete(result: dict) -> list[str]:
    """The targets whose integrated gradients miss completeness by more than the tolerance."""

    if result["method"] != "integrated-gradients":
        return []
    return [
        e["target"]
        for e in explanations(result)
        if not within_tolerance(e["completeness_error"], e["score"], e["baseline_score"])
    ]


def check_request(task: str, text: str, pair: str | None, question: str | None, info: dict, plain: bool) -> None:
    explainer = _explainer(task)
    if question is not None and not explainer.reads_questions:
        raise BertkitError(f"--question: only for QA models; this is a {task} model")
    if pair is not None and not explainer.reads_pairs:
        raise BertkitError(f"--text-pair: only for classify models that read pairs; this is a {task} model")
    explainer.check(text, pair, question, info, plain)


def explain_file(
    model: str,
    asked: Explanation,
    picture: str | None = None,
    json_path: str | None = None,
    trust_remote_code: bool = False,
    device: str | None = None,
) -> dict:
    """Load `model`, explain its prediction as `asked`, write the picture and the JSON; every
    option and output is checked before the model loads."""
    asked.check()
    if picture is not None:
        if Path(picture).suffix.lower() not in PICTURES:
            raise BertkitError(f"--output {picture}: name it NAME.html (a page) or NAME.png (a picture)")
        check_output_file(picture, *bundle_inputs(model), example="explain.html")
    if json_path not in (None, "-"):
        check_output_file(json_path, *bundle_inputs(model), example="explain.json", flag="--json")
    bundle = open_bundle(model, trust_remote_code)
    if bundle.runtime == "onnx":
        raise BertkitError(
            f"{model} is an ONNX bundle: explain takes gradients (and runs the model on edited inputs) in "
            "PyTorch; explain the bundle it was exported from"
        )
    plain = not (bundle.path / "bertkit.json").is_file()
    check_request(bundle.task, asked.text, asked.pair, asked.question, bundle.info, plain)

    # fp32 on a GPU too: attributions sum gradients over many steps, which half precision would blur
    network = bundle.load_model(get_task(bundle.task).auto_model, device, precision="fp32")
    tokenizer = bundle.load_tokenizer()
    result = explain(network, tokenizer, bundle.info, asked)
    if picture is not None:

        with atomic_path(Path(picture)) as tmp:
            if Path(picture).suffix.lower() == ".png":
                render.png(result, tmp)
            else:
                tmp.write_text(render.page(result), encoding="utf-8")
    if json_path is not None:
        with atomic_text(json_path) as handle:
            handle.write(json_line(result) + "\n")
    return result

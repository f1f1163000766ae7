"""`bertkit evaluate`: score a bundle on a labelled file; write metrics.json and plots.

What "labelled" means belongs to the task (`task.evaluation.evaluate`); loading the bundle, keeping the
output directory safe and writing the results are the same for every task.
"""

from __future__ import annotations

import contextlib
from pathlib import Path

from bertkit.core import outputs, plots, sharding
from bertkit.core.progress import status
from bertkit.tasks import get_task
from bertkit.tasks.bundle import open_bundle
from bertkit.tasks.contract.options import EvaluateOptions


def default_output_dir(model: str, data: str) -> Path:
    stem = Path(data).name.split(".")[0] or "data"
    return Path(model) / f"eval-{stem}"


def evaluate_file(
    model: str,
    data: str,
    output_dir: str | None = None,
    overwrite: bool = False,
    device: str | None = None,
    trust_remote_code: bool = False,
    options: EvaluateOptions | None = None,
    runtime: str | None = None,
    precision: str = "auto",
) -> tuple[dict, Path]:
    """Score the bundle at `model` on the labelled file `data`; returns the scores and where
    metrics.json and the plots went. `precision`: as `inference.precision_for`."""
    options = options or EvaluateOptions()
    bundle = open_bundle(model, trust_remote_code, runtime)
    target = Path(output_dir) if output_dir else default_output_dir(model, data)
    outputs.check_output_dir(target, overwrite, [data, model], "evaluation", home=model)
    task = get_task(bundle.task)
    here = sharding.place()
    with contextlib.ExitStack() as stack:
        if here is not None:  # several processes: each runs its share of the batches, all score the whole
            stack.enter_context(sharding.group(here))
            stack.enter_context(sharding.split_forward(here))
        staged = None
        if here is None or here.main:
            # staged first: an output that cannot be written fails before the scoring
            staged = stack.enter_context(outputs.staged_dir(target, overwrite, "evaluation", [data, model], home=model))
        tokenizer = bundle.load_tokenizer()
        network = bundle.load_model(task.auto_model, device, precision)
        with status(f"scoring {data}"):
            scores = task.evaluation.evaluate(network, tokenizer, bundle.info, data, options)
        if staged is not None:
            record = {"data": data, "model": model, **scores}
            outputs.write_json(staged / "metrics.json", record, undefined_as_null=True)
            plots.task_plots(scores, staged)
    return scores, target

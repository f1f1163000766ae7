"""`bertkit compare --config base.yaml --model NAME --model NAME`: each model trained under the
same config and seed into a folder of its own inside the output, then all of them compared on
the config's test data (its validation data when it has no test data) with the same report."""

from __future__ import annotations

from pathlib import Path

from bertkit.comparison import KIND, Comparison, compare_models
from bertkit.core import models, outputs
from bertkit.core.errors import BertkitError
from bertkit.core.progress import console
from bertkit.tasks import get_task
from bertkit.tasks.contract import Evaluation
from bertkit.training import train


def scoring_data(cfg, data: str | None) -> tuple[str, str]:
    """The file the trained models are compared on, and which split it is."""
    if data:
        return data, "--data"
    for role in ("test", "validation"):
        source = getattr(cfg.data, role)
        if source is not None and source.path:
            return source.path, f"the config's {role} data"
    raise BertkitError(
        "the config has no data.test or data.validation file to compare the models on; give one with --data FILE"
    )


def check_before_training(configs: dict) -> None:
    """What would stop the comparison after hours of training, refused before any: a task compare
    cannot score, a model that is not there (or reads fewer tokens than model.max_length)."""

    for cfg in configs.values():
        evaluation = get_task(cfg.task).evaluation
        if evaluation is None or type(evaluation).evaluate_examples is Evaluation.evaluate_examples:
            raise BertkitError(
                f"bertkit compare cannot score {cfg.task} models (the task gives no per-example results); "
                "nothing was trained"
            )
        source = models.resolve(cfg.model.name, cfg.model.revision)
        models.check_max_length(source, cfg, get_task(cfg.task).training.lengths(cfg))


def train_and_compare(
    configs: dict, output: str, data: str | None = None, overwrite: bool = False, protect=(), **compare
) -> tuple[Comparison, Path, str]:
    """Train each config (`{model name: its config}`, output_dir already inside `output`), then
    compare the bundles. Returns the comparison, the output folder and which data scored them."""

    target = Path(output)
    check_before_training(configs)
    first = next(iter(configs.values()))
    scored_on, which = scoring_data(first, data)
    outputs.check_output_dir(target, overwrite, [*protect, scored_on], KIND)
    target.mkdir(parents=True, exist_ok=True)
    outputs.write_manifest(target, KIND)  # bertkit's from the start: --overwrite may replace what a failed run left
    bundles = []
    for name, cfg in configs.items():
        console.print(f"[bold]training {name}[/bold] into {cfg.output_dir}")
        path, _ = train(cfg, overwrite=overwrite, protect=protect)
        bundles.append(str(path))
    comparison, folder = compare_models(bundles, scored_on, str(target), overwrite, in_place=True, **compare)
    return comparison, folder, which

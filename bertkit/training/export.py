"""Writing the bundle: the trained model, its tokenizer, bertkit.json, metrics and the model card,
staged and moved into place in one step.
"""

from __future__ import annotations

import platform
import time
from pathlib import Path

from bertkit import __version__
from bertkit.config import Config
from bertkit.core import outputs, plots
from bertkit.core.adapters.training import is_adapted
from bertkit.core.adapters.training import save as save_adapter
from bertkit.core.outputs.strict_json import undefined_as_null
from bertkit.core.run_info import INFO_FILE, RunInfo
from bertkit.training import card


def library_versions() -> dict:
    import importlib.metadata as md

    versions = {"bertkit": __version__, "python": platform.python_version()}
    for name in ("torch", "transformers", "datasets", "evaluate", "accelerate", "tokenizers"):
        try:
            versions[name] = md.version(name)
        except md.PackageNotFoundError:
            pass
    return versions


def labelled_data(cfg: Config) -> dict:
    """The run's data sources with absolute paths (the config keeps them as written, relative to
    where training ran): `bertkit select` leaves their texts out of its picks from any folder."""
    found = {}
    for role in ("train", "validation", "test"):
        source = getattr(cfg.data, role, None)
        if source is None or not hasattr(source, "model_copy"):
            continue
        update = {}
        if source.path:
            update["path"] = str(Path(source.path).resolve())
        if source.files:
            update["files"] = {label: str(Path(path).resolve()) for label, path in source.files.items()}
        found[role] = source.model_copy(update=update).model_dump(mode="json")
    return found


def write_bundle(
    trainer,
    cfg: Config,
    info: RunInfo,
    scores: dict,
    stats: dict,
    best: str,
    overwrite: bool,
    headline=None,
    export=None,
    protect=(),
) -> None:
    """The bundle: the model (`export(model, info)` when the task saves something other than the
    trained module as it is: the encoder inside a wrapper, or a model with its settings changed),
    tokenizer, bertkit.json, metrics.json (headline numbers first), plots and model card."""
    final = Path(cfg.output_dir)
    scores = undefined_as_null(scores)  # a metric the data leaves undefined is null, and says so
    headline = undefined_as_null(headline or {})
    with outputs.staged_dir(final, overwrite, "bundle", protect) as staged:
        exported = export(trainer.model, info) if export else None
        if is_adapted(exported if exported is not None else trainer.model):  # the adapter and head only
            save_adapter(exported if exported is not None else trainer.model, staged)
            trainer.processing_class.save_pretrained(str(staged))
        elif exported is not None:
            exported.save_pretrained(str(staged))
            trainer.processing_class.save_pretrained(str(staged))
        else:
            trainer.save_model(str(staged))
        (staged / "training_args.bin").unlink(missing_ok=True)  # a pickle; the config says it all
        main_role = "test" if "test" in scores else "validation"
        bundle_info = info.replace(
            bertkit_version=__version__,
            base_model=info.get("base_model") or cfg.model.name,
            metric_for_best_model=best,
            metrics=scores,
            training=stats,
            config=cfg.dump(),
            labelled_data=labelled_data(cfg),
            versions=library_versions(),
            created=time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        )
        outputs.write_json(staged / INFO_FILE, bundle_info.to_dict(), undefined_as_null=True)
        outputs.write_json(staged / "metrics.json", {**headline, **scores, "training": stats}, undefined_as_null=True)
        plots.training_curves(trainer.state.log_history, best, staged / "training_curves.png")
        plots.task_plots(scores.get(main_role, {}), staged)
        card.model_card(bundle_info, staged / "README.md")

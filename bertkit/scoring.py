"""`bertkit evaluate`: score a bundle on a labelled file; write metrics.json and plots."""

from __future__ import annotations

from pathlib import Path

from bertkit import outputs, reports
from bertkit.bundle import open_bundle
from bertkit.config import DataSource, load_config
from bertkit.data import load_source, require_columns
from bertkit.errors import BertkitError
from bertkit.inference import forward
from bertkit.tasks import get_task


def default_output_dir(model: str, data: str) -> Path:
    stem = Path(data).name.split(".")[0] or "data"
    return Path(model) / f"eval-{stem}"


def evaluate_file(
    model: str,
    data: str,
    output_dir: str | None = None,
    overwrite: bool = False,
    data_format: str | None = None,
    batch_size: int = 32,
    device: str | None = None,
    **columns,
) -> tuple[dict, Path]:
    bundle = open_bundle(model)
    info = dict(bundle.info)
    info.update({k: v for k, v in columns.items() if v})
    target = Path(output_dir) if output_dir else default_output_dir(model, data)
    outputs.check_output_dir(target, overwrite)
    task = get_task(bundle.task)
    cfg = load_config(None, task=bundle.task)
    cfg.data.text_column = info.get("text_column") or "text"
    cfg.data.label_column = info.get("label_column") or "label"
    ds = load_source(DataSource(path=data, format=data_format), cfg)
    require_columns(
        ds,
        {
            "text_column": info.get("text_column") or "text",
            "text_pair_column": info.get("text_pair_column"),
            "label_column": info.get("label_column") or "label",
        },
        data,
    )
    if not info.get("labels") and info.get("problem_type") != "regression":
        raise BertkitError(f"{model}: the model has no label names, so its predictions cannot be scored")
    references = task.encode_labels(ds[info.get("label_column") or "label"], info, data)
    tokenizer = bundle.load_tokenizer()
    network = bundle.load_model(task.auto_model, device)
    from bertkit.progress import status

    with status(f"scoring {len(ds):,} examples"):
        features = task.encode_for_scoring(tokenizer, ds, info)
        logits = forward(network, tokenizer, features, batch_size)
    scores = task.score(logits, references, info)
    staged = outputs.staging_dir(target)
    try:
        outputs.write_json(staged / "metrics.json", {"data": data, "model": model, **scores})
        reports.task_plots(scores, staged)
        outputs.publish_dir(staged, target, overwrite)
    except BaseException:
        import shutil

        shutil.rmtree(staged, ignore_errors=True)
        raise
    return scores, target

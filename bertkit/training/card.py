"""The model card (README.md) of a bundle: what the model is, its data, its scores, how it was
trained and how to use it, with the task's own words (`Card.summary`, `cli_usage`,
`python_usage`)."""

from __future__ import annotations

from pathlib import Path

from bertkit.core import plots
from bertkit.core.outputs import atomic_text
from bertkit.tasks import get_task, record


def model_card(info: dict, path: Path) -> None:
    with atomic_text(str(path)) as handle:
        handle.write(card_text(info))


def card_text(info: dict) -> str:
    task = get_task(info["task"])
    cfg = info.get("config", {})
    data = cfg.get("data", {})
    train = cfg.get("train", {})
    lines = [
        "---",
        "library_name: transformers",
        f"base_model: {info.get('base_model')}",
        f"tags: [bertkit, {record(info['task']).pipeline}]",
        "---",
        "",
        f"# {Path(cfg.get('output_dir', 'model')).name}",
        "",
        f"A `{info.get('task')}` model ({task.card.summary(info)}) "
        + ("pre-trained from scratch" if info.get("from_scratch") else f"fine-tuned from `{info.get('base_model')}`")
        + f" with bertkit {info.get('bertkit_version')}.",
        "",
        *_headline(info),
        "## Data",
        "",
        f"- train: `{_source(data.get('train'))}` ({info.get('training', {}).get('train_examples', '?')} examples)",
        f"- validation: `{_source(data.get('validation')) or 'split off from train'}`",
    ]
    if data.get("test"):
        lines.append(f"- test: `{_source(data.get('test'))}`")
    if info.get("labels"):
        lines.append(f"- labels: {', '.join(f'`{x}`' for x in info['labels'])}")
    lines += ["", "## Results", ""]
    for role, scores in info.get("metrics", {}).items():
        lines += [f"**{role}**", "", "| metric | value |", "|---|---|"]
        lines += [f"| {k} | {v:.4f} |" for k, v in scores.items() if isinstance(v, float)]
        lines.append("")
        per_class = scores.get("per_class") or scores.get("per_type")
        if per_class:
            kind = "class" if "per_class" in scores else "entity type"
            lines += [f"| {kind} | precision | recall | F1 | support |", "|---|---|---|---|---|"]
            lines += [
                f"| {name} | {s['precision']:.3f} | {s['recall']:.3f} | {s['f1']:.3f} | {s['support']} |"
                for name, s in per_class.items()
            ]
            lines.append("")
    stats = info.get("training", {})
    where = cfg.get("output_dir", "MODEL_DIR")
    contrastive = stats.get("contrastive")
    lines += ["## Training", ""]
    if contrastive:  # classify's few-shot route: no epochs, its own rate (tasks/classify/contrastive.py)
        tuning = (
            "no tuning (the encoder was frozen)"
            if contrastive.get("frozen")
            else f"{contrastive.get('steps')} steps over {contrastive.get('pairs')} pairs of examples at learning rate "
            f"{contrastive.get('learning_rate')} (pair loss {contrastive.get('pair_loss_first')} to "
            f"{contrastive.get('pair_loss_last')})"
        )
        lines += [
            f"The contrastive few-shot route: {tuning}, then a {contrastive.get('head')} head on the "
            f"{contrastive.get('pooling', 'mean')}-pooled sentence vector; max length {info.get('max_length')}, "
            f"seed {train.get('seed')}; {stats.get('train_seconds')} s.",
            "",
        ]
    else:
        lines += [
            f"{train.get('epochs')} epochs, batch size {train.get('batch_size')}, learning rate "
            f"{train.get('learning_rate')}, max length {info.get('max_length')}, seed {train.get('seed')}, "
            f"precision {stats.get('precision')}; best checkpoint chosen by `{info.get('metric_for_best_model')}`. "
            f"{stats.get('train_steps')} steps in {stats.get('train_seconds')} s.{_loss_line(stats.get('loss'))}",
            "",
        ]
    lines += ["![training curves](training_curves.png)", ""]
    scored = info.get("metrics", {})
    for file, name in plots.pictures_of(scored.get("test") or scored.get("validation") or {}):  # as drawn
        lines += [f"![{name}]({file})", ""]
    lines += _adapter_lines(info.get("adapter"), where)
    lines += [
        "## Use",
        "",
        "```bash",
        task.card.cli_usage(where),
        "```",
        "",
        "```python",
        *_python_usage(task, where, info, record(info["task"]).pipeline),
        "```",
        "",
        "Library versions: " + ", ".join(f"{k} {v}" for k, v in info.get("versions", {}).items()),
        "",
    ]
    return "\n".join(lines)


def _python_usage(task, where: str, info: dict, pipeline: str) -> list[str]:
    """The task's lines of plain transformers code; an adapter bundle holds no whole model for them
    to read, so its lines read the merged bundle, made first."""
    if not info.get("adapter"):
        return task.card.python_usage(where, info, pipeline)
    merged = f"{where.rstrip('/')}-merged"
    return [
        "# an adapter bundle holds no whole model: merge it into its base first,",
        f"#   bertkit adapter merge -m {where} -o {merged}",
        *task.card.python_usage(merged, info, pipeline),
    ]


def _adapter_lines(adapter: dict | None, where: str) -> list[str]:
    """What an adapter bundle holds and needs: its base, found by name and checked by hash."""
    if not adapter:
        return []
    return [
        "## Adapter",
        "",
        f"A LoRA adapter (r {adapter.get('r')}, alpha {adapter.get('alpha')}, on "
        f"{adapter.get('layers_adapted')} layers ending {', '.join(map(str, adapter.get('target_modules', [])))}) "
        f"and the task head: {adapter.get('trainable_parameters', 0):,} trained parameters of "
        f"{adapter.get('parameters', 0):,}. It runs on its base model `{adapter.get('base_model')}` (weights "
        f"`{adapter.get('base_hash')}`), which bertkit loads and checks; `bertkit adapter merge -m {where} -o "
        "MERGED` writes a bundle that needs neither the base nor peft.",
        "",
    ]


def _headline(info: dict) -> list[str]:
    """'metric went from X before training to Y after it' for tasks that measure the change."""
    scores = info.get("metrics", {}).get("validation", {})
    names = [k.removesuffix("_before") for k in scores if k.endswith("_before") and k[:-7] + "_after" in scores]
    return [
        f"Validation {name} went from **{scores[name + '_before']:.4g}** before training to "
        f"**{scores[name + '_after']:.4g}** after it."
        for name in names
    ] + ([""] if names else [])


def _source(value) -> str:
    if not value:
        return ""
    if value.get("hub"):
        return (
            f"hub:{value['hub']}" + (f"/{value['config']}" if value.get("config") else "") + f" [{value.get('split')}]"
        )
    return value.get("path") or ""


def _loss_line(loss: dict | None) -> str:
    """' Loss: focal (gamma 2.0), balanced weights.' for a run with its own loss, else ''."""
    if not loss:
        return ""
    text = loss["loss"] + (f" (gamma {loss['focal_gamma']})" if "focal_gamma" in loss else "")
    if "class_weights" in loss:
        text += f", {loss['class_weights']} class weights"
    return f" Loss: {text}."

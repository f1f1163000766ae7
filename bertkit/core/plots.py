"""Plots (training curves, confusion matrix) and the bundle's README.md model card."""

from __future__ import annotations

from pathlib import Path

# Fonts with Japanese and Chinese glyphs, tried after the default for labels such as 人名 or 地名.
CJK_FONTS = ["Noto Sans CJK JP", "IPAexGothic", "IPAGothic", "TakaoGothic", "Hiragino Sans", "Yu Gothic", "MS Gothic"]


def pyplot():
    import warnings

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib import font_manager

    try:  # bertkit[ja] brings IPAexGothic with it
        import matplotlib_fontja  # noqa: F401
    except ImportError:
        pass
    installed = {f.name for f in font_manager.fontManager.ttflist}
    # named families, not the generic "sans-serif": matplotlib falls back from font to font (a
    # glyph DejaVu lacks, drawn by the CJK font) only across the families named in font.family
    plt.rcParams["font.family"] = ["DejaVu Sans", *(f for f in CJK_FONTS if f in installed)]
    # without such a font CJK labels are drawn as boxes: say so in the docs, not once per glyph
    warnings.filterwarnings("ignore", message="Glyph .* missing from font")
    return plt


def save_png(fig, path, dpi: int = 110) -> None:
    """Write `fig` to `path` as a PNG, atomically (a crash leaves no half picture), and close it."""
    import matplotlib.pyplot as plt

    from bertkit.core.outputs import atomic_path

    with atomic_path(Path(path)) as tmp:
        fig.savefig(tmp, dpi=dpi, format="png")
    plt.close(fig)


def training_curves(log_history: list[dict], metric: str | None, path: Path) -> None:
    """Training and evaluation loss by step on the left; the selection metric on the right."""
    plt = pyplot()
    train = [(e["step"], e["loss"]) for e in log_history if "loss" in e and "step" in e]
    evals = [e for e in log_history if "eval_loss" in e]
    key = f"eval_{metric}" if metric else None
    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 4))
    if train:
        left.plot(*zip(*train, strict=True), label="training loss", color="tab:blue", alpha=0.8)
    if evals:
        left.plot(
            [e["step"] for e in evals],
            [e["eval_loss"] for e in evals],
            "o-",
            label="validation loss",
            color="tab:orange",
        )
    left.set_xlabel("step")
    left.set_ylabel("loss")
    left.set_title("Loss")
    if train or evals:  # a run too short to log a loss has nothing to label
        left.legend()
    left.grid(alpha=0.3)
    points = [(e["step"], e[key]) for e in evals if key and key in e]
    if points:
        right.plot(*zip(*points, strict=True), "o-", color="tab:green")
        for step, value in points:
            right.annotate(
                f"{value:.3f}", (step, value), textcoords="offset points", xytext=(0, 6), ha="center", fontsize=8
            )
        right.set_title(f"Validation {metric}")
    else:
        right.text(0.5, 0.5, "no evaluation during training", ha="center", va="center")
        right.set_title("Validation metric")
    right.set_xlabel("step")
    right.grid(alpha=0.3)
    fig.tight_layout()
    save_png(fig, path)


def confusion_matrix(matrix: list[list[int]], labels: list[str], path: Path) -> None:
    """Counts in each cell; colour by the share of each true class, so rare classes show too."""
    import numpy as np

    plt = pyplot()
    counts = np.asarray(matrix)
    share = counts / np.maximum(counts.sum(axis=1, keepdims=True), 1)
    size = max(4.0, 0.6 * len(labels) + 2)
    fig, ax = plt.subplots(figsize=(size + 1, size))
    image = ax.imshow(share, cmap="Blues", vmin=0, vmax=1)
    ax.set_xticks(range(len(labels)), labels, rotation=45, ha="right")
    ax.set_yticks(range(len(labels)), labels)
    ax.set_xlabel("predicted")
    ax.set_ylabel("true")
    for (i, j), value in np.ndenumerate(counts):
        ax.text(j, i, str(value), ha="center", va="center", color="white" if share[i, j] > 0.5 else "black")
    fig.colorbar(image, ax=ax, label="share of true class")
    ax.set_title("Confusion matrix")
    fig.tight_layout()
    save_png(fig, path)


def length_histogram(lengths: dict[str, list[int]], max_length: int, path: Path) -> None:
    """Texts per length in the model's tokens, one series per split, with the cut at max_length."""
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(7, 4))
    longest = max((max(v) for v in lengths.values() if v), default=1)
    bins = min(60, max(longest, 1))
    for role, values in lengths.items():
        ax.hist(values, bins=bins, range=(0, longest + 1), alpha=0.55, label=f"{role} ({len(values):,})")
    ax.axvline(max_length, color="crimson", linestyle="--", label=f"model.max_length = {max_length}")
    ax.set_xlabel("length in tokens (special tokens included)")
    ax.set_ylabel("examples")
    ax.set_title("Lengths against model.max_length")
    ax.legend()
    fig.tight_layout()
    save_png(fig, path)


def label_bars(counts: dict[str, dict[str, int]], path: Path) -> None:
    """Examples per label, side by side for each split."""
    import numpy as np

    plt = pyplot()
    labels = list(dict.fromkeys(label for split in counts.values() for label in split))[:40]
    fig, ax = plt.subplots(figsize=(max(6.0, 0.45 * len(labels) * len(counts) + 2), 4))
    width = 0.8 / max(len(counts), 1)
    for k, (role, split) in enumerate(counts.items()):
        ax.bar(np.arange(len(labels)) + k * width, [split.get(label, 0) for label in labels], width, label=role)
    ax.set_xticks(np.arange(len(labels)) + width * (len(counts) - 1) / 2, labels, rotation=45, ha="right")
    ax.set_ylabel("examples")
    ax.set_title("Labels per split")
    ax.legend()
    fig.tight_layout()
    save_png(fig, path)


def per_type_f1(per_type: dict, path: Path) -> None:
    """Horizontal bars of precision, recall and F1 for each entity type."""
    import numpy as np

    plt = pyplot()
    names = sorted(per_type, key=lambda n: per_type[n]["f1"])
    y = np.arange(len(names))
    fig, ax = plt.subplots(figsize=(7, 1.2 + 0.5 * len(names)))
    for shift, key, colour in (
        (-0.25, "precision", "tab:blue"),
        (0, "recall", "tab:orange"),
        (0.25, "f1", "tab:green"),
    ):
        ax.barh(y + shift, [per_type[n][key] for n in names], height=0.25, label=key, color=colour)
    ax.set_yticks(y, [f"{n} ({per_type[n]['support']})" for n in names])
    ax.set_xlim(0, 1)
    ax.set_title("Entity scores by type (support)")
    ax.legend(loc="lower right")
    fig.tight_layout()
    save_png(fig, path)


def task_plots(scores: dict, folder: Path) -> list[str]:
    """Whatever pictures a result supports; returns the file names written."""
    written = []
    if "confusion_matrix" in scores:
        confusion_matrix(scores["confusion_matrix"], scores["labels"], folder / "confusion_matrix.png")
        written.append("confusion_matrix.png")
    if scores.get("per_type"):
        per_type_f1(scores["per_type"], folder / "per_type_f1.png")
        written.append("per_type_f1.png")
    return written


# ---------------------------------------------------------------- model card


def model_card(info: dict, path: Path) -> None:
    from bertkit.core.outputs import atomic_text

    with atomic_text(str(path)) as handle:
        handle.write(card_text(info))


def card_text(info: dict) -> str:
    from bertkit.tasks import get_task, record

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
        f"A `{info.get('task')}` model ({task.card_summary(info)}) "
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
    if info.get("problem_type") == "single_label":
        lines += ["![confusion matrix](confusion_matrix.png)", ""]
    if info.get("task") == "ner":
        lines += ["![scores by entity type](per_type_f1.png)", ""]
    lines += _adapter_lines(info.get("adapter"), where)
    lines += [
        "## Use",
        "",
        "```bash",
        task.cli_usage(where),
        "```",
        "",
        "```python",
        *_python_usage(task, where, info),
        "```",
        "",
        "Library versions: " + ", ".join(f"{k} {v}" for k, v in info.get("versions", {}).items()),
        "",
    ]
    return "\n".join(lines)


def _python_usage(task, where: str, info: dict) -> list[str]:
    """The task's lines of plain transformers code; an adapter bundle holds no whole model for them
    to read, so its lines read the merged bundle, made first."""
    if not info.get("adapter"):
        return task.python_usage(where, info)
    merged = f"{where.rstrip('/')}-merged"
    return [
        "# an adapter bundle holds no whole model: merge it into its base first,",
        f"#   bertkit adapter merge -m {where} -o {merged}",
        *task.python_usage(merged, info),
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

"""Plots: training curves, a confusion matrix, scores by entity type, a reliability diagram, lengths
and labels of a data set."""

from __future__ import annotations

from pathlib import Path

from bertkit.core.outputs import atomic_path

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


def confusion_matrix(
    matrix: list[list[int]], labels: list[str], path: Path, axes=("true", "predicted"), title: str = "Confusion matrix"
) -> None:
    """Counts in each cell; colour by the share of each row's class, so rare classes show too
    (`axes`: what the rows and the columns are)."""
    import numpy as np

    plt = pyplot()
    counts = np.asarray(matrix)
    share = counts / np.maximum(counts.sum(axis=1, keepdims=True), 1)
    size = max(4.0, 0.6 * len(labels) + 2)
    fig, ax = plt.subplots(figsize=(size + 1, size))
    image = ax.imshow(share, cmap="Blues", vmin=0, vmax=1)
    ax.set_xticks(range(len(labels)), labels, rotation=45, ha="right")
    ax.set_yticks(range(len(labels)), labels)
    ax.set_xlabel(axes[1])
    ax.set_ylabel(axes[0])
    for (i, j), value in np.ndenumerate(counts):
        ax.text(j, i, str(value), ha="center", va="center", color="white" if share[i, j] > 0.5 else "black")
    fig.colorbar(image, ax=ax, label=f"share of the {axes[0]} class")
    ax.set_title(title)
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


def label_bars(counts: dict[str, dict[str, int]], path: Path, title: str = "Labels per split") -> None:
    """Examples per label, side by side for each split (or each kind of count)."""
    import numpy as np

    plt = pyplot()
    labels = list(dict.fromkeys(label for split in counts.values() for label in split))[:40]
    fig, ax = plt.subplots(figsize=(max(6.0, 0.45 * len(labels) * len(counts) + 2), 4))
    width = 0.8 / max(len(counts), 1)
    for k, (role, split) in enumerate(counts.items()):
        ax.bar(np.arange(len(labels)) + k * width, [split.get(label, 0) for label in labels], width, label=role)
    ax.set_xticks(np.arange(len(labels)) + width * (len(counts) - 1) / 2, labels, rotation=45, ha="right")
    ax.set_ylabel("examples")
    ax.set_title(title)
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


def reliability(bins: dict, before: dict | None, ece: float, ece_before: float | None, path: Path) -> None:
    """The reliability diagram: accuracy against mean score in each confidence bin (the
    `calibration` metric module's bins), the scores as given and, when calibrated, as they were
    before; a perfectly calibrated model lies on the diagonal. Dot areas follow the bins' counts."""
    import numpy as np

    plt = pyplot()
    fig, ax = plt.subplots(figsize=(5.2, 5))
    ax.plot([0, 1], [0, 1], color="grey", linestyle="--", linewidth=1, label="perfectly calibrated")
    drawn = [(before, ece_before, "before calibration", "tab:orange"), (bins, ece, "scores", "tab:blue")]
    if before is not None:
        drawn[1] = (bins, ece, "calibrated", "tab:blue")
    for found, error, name, colour in drawn:
        if not found or not found.get("count"):
            continue
        count = np.asarray(found["count"], dtype=float)
        size = 20 + 280 * count / count.max()
        ax.plot(found["confidence"], found["accuracy"], color=colour, linewidth=1.2)
        ax.scatter(found["confidence"], found["accuracy"], s=size, color=colour, alpha=0.7,
                   label=f"{name} (ECE {error:.3f})")  # fmt: skip
    ax.set_xlim(0, 1)
    ax.set_ylim(0, 1.02)
    ax.set_xlabel("score of the predicted label (mean in the bin)")
    ax.set_ylabel("share right in the bin")
    ax.set_title("Reliability diagram")
    ax.legend(loc="upper left", fontsize=8)
    fig.tight_layout()
    save_png(fig, path)


# the pictures a result's scores support: (the scores' key, the file, what the model card calls it)
PICTURES = (
    ("confusion_matrix", "confusion_matrix.png", "confusion matrix"),
    ("per_type", "per_type_f1.png", "scores by entity type"),
    ("reliability", "reliability.png", "reliability diagram"),
)


def pictures_of(scores: dict) -> list[tuple[str, str]]:
    """(file, name) of each picture `scores` support, as `task_plots` draws them."""
    return [(file, name) for key, file, name in PICTURES if scores.get(key)]


def task_plots(scores: dict, folder: Path) -> list[str]:
    """Whatever pictures a result supports; returns the file names written."""
    for file, _ in pictures_of(scores):
        if file == "confusion_matrix.png":
            confusion_matrix(scores["confusion_matrix"], scores["labels"], folder / file)
        elif file == "reliability.png":
            before = scores.get("reliability_uncalibrated")
            reliability(scores["reliability"], before, scores["ece"], scores.get("ece_uncalibrated"), folder / file)
        else:
            per_type_f1(scores["per_type"], folder / file)
    return [file for file, _ in pictures_of(scores)]

"""The report of `bertkit compare`: report.md (the table with intervals, the pairwise tests and a
verdict), report.csv (one row per model: `model`, then the metrics under their metrics.json
names, then parameters, size and speed, then each metric's interval), report.json (all of it)
and report.png (a grouped bar chart with the intervals as error bars)."""

from __future__ import annotations

import csv
import math
from pathlib import Path

from bertkit.comparison.bootstrap import ALPHA, LEVEL
from bertkit.core import outputs, plots


def main_metric(metrics: list[str]) -> str:
    """The metric the verdict speaks of: F1 where the task has one as a whole, else the first."""
    return "f1" if "f1" in metrics else metrics[0]


def digits(comparison) -> int:
    """3 decimals for scores in [0, 1]; 1 for the 0-100 scores of QA."""
    top = max(abs(comparison.point(r.name, m)) for r in comparison.rows for m in comparison.metrics)
    return 1 if top > 1.0 else 3


def human_size(size: int | None) -> str:
    if size is None:
        return "-"
    for unit in ("B", "KB", "MB", "GB"):
        if size < 1000 or unit == "GB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1000
    return ""


def size_cell(row) -> str:
    """A model's size; an adapter bundle's with the weights of the base it runs on."""
    base = f" + {human_size(row.base_size_bytes)} base" if row.base_size_bytes else ""
    return human_size(row.size_bytes) + base


def human_count(count: int | None) -> str:
    if count is None:
        return "-"
    return f"{count / 1e6:.1f}M" if count >= 1e6 else f"{count / 1e3:.1f}k" if count >= 1e3 else str(count)


def p_text(pair: dict, rounds: int) -> str:
    """A p-value as text; a bootstrap one of 0 is below what the rounds can resolve."""
    if pair["test"] != "mcnemar" and pair["p_value"] == 0:
        return f"< {1 / rounds:.2g}"
    return f"{pair['p_value']:.3g}"


def cell(value: float, low: float, high: float, places: int) -> str:
    return f"{value:.{places}f} [{_number(low, f'.{places}f')}, {_number(high, f'.{places}f')}]"


def _number(value: float, spec: str = ".6g") -> str:
    """A number as text; one that is not finite (a bound whose resamples leave the metric undefined)
    is left empty, never written `nan`."""
    return format(value, spec) if math.isfinite(value) else ""


def verdict(comparison) -> str:
    """One sentence: the best model on the main metric, and whether it beats the runner-up."""
    metric = main_metric(comparison.metrics)
    places = digits(comparison)
    ranked = sorted(comparison.rows, key=lambda r: comparison.point(r.name, metric), reverse=True)
    best, second = ranked[0], ranked[1]
    pair = next(p for p in comparison.pairs if p["metric"] == metric and {p["a"], p["b"]} == {best.name, second.name})
    sign = 1 if pair["a"] == best.name else -1
    gap = sign * pair["difference"]
    low, high = sorted(sign * x for x in pair["ci"])
    head = (
        f"Best on {metric}: **{best.name}** ({comparison.point(best.name, metric):.{places}f}), "
        f"{gap:.{places}f} ahead of {second.name} (95% interval of the difference [{low:.{places}f}, "
        f"{high:.{places}f}], {pair['test']} p {_p_clause(pair, comparison.rounds)})"
    )
    if pair["significant"]:
        return head + f": a significant difference at the {ALPHA:.0%} level."
    return head + f": not significant at the {ALPHA:.0%} level; on this data the two cannot be told apart."


def _p_clause(pair: dict, rounds: int) -> str:
    text = p_text(pair, rounds)
    return text if text.startswith("<") else f"= {text}"


def as_dict(comparison) -> dict:
    return {
        "task": comparison.task,
        "data": comparison.data,
        "examples": comparison.examples,
        "metrics": comparison.metrics,
        "confidence": LEVEL,
        "alpha": ALPHA,
        "bootstrap": {"rounds": comparison.rounds, "seed": comparison.seed, "seconds": comparison.bootstrap_seconds},
        "models": [
            {
                "model": r.name,
                "path": r.path,
                "metrics": {m: float(r.scores[m]) for m in comparison.metrics},
                "ci": {m: list(comparison.intervals[r.name][m]) for m in comparison.metrics},
                "parameters": r.parameters,
                "size_bytes": r.size_bytes,
                "base_size_bytes": r.base_size_bytes,
                "texts_per_second": r.texts_per_second,
                "note": r.note,
                "scores": r.scores,
            }
            for r in comparison.rows
        ],
        "pairs": comparison.pairs,
        "verdict": verdict(comparison).replace("**", ""),
    }


def markdown(comparison) -> str:
    places, metrics = digits(comparison), comparison.metrics
    lines = [
        f"# Comparison on {comparison.data}",
        "",
        f"{comparison.examples} examples, {comparison.task}. Each cell: the score and its {LEVEL:.0%} interval "
        f"(paired bootstrap, {comparison.rounds} resamples, seed {comparison.seed}).",
        "",
        "| model | " + " | ".join(metrics) + " | parameters | size | texts/s |",
        "|---" * (len(metrics) + 4) + "|",
    ]
    for r in comparison.rows:
        found = [cell(r.scores[m], *comparison.intervals[r.name][m], places) for m in metrics]
        extra = [human_count(r.parameters), size_cell(r), f"{r.texts_per_second:.0f}"]
        lines.append(f"| {r.name} | " + " | ".join(found + extra) + " |")
    notes = [f"- {r.name}: {r.note}" for r in comparison.rows if r.note]
    lines += ["", *notes, "" if notes else "", verdict(comparison), "", "## Pairs", ""]
    counted = sorted({p["metric"] for p in comparison.pairs if p["test"] == "mcnemar"})
    lines += [
        f"Difference a - b. Counted example by example ({', '.join(counted) or 'none'}): McNemar's exact test; "
        f"the other metrics: paired bootstrap. Significant: p < {ALPHA}.",
        "",
        "| a | b | metric | a - b | 95% interval | test | p | significant |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for p in comparison.pairs:
        low, high = p["ci"]
        lines.append(
            f"| {p['a']} | {p['b']} | {p['metric']} | {p['difference']:+.{places}f} | "
            f"[{low:+.{places}f}, {high:+.{places}f}] | {p['test']} | {p_text(p, comparison.rounds)} | "
            f"{'yes' if p['significant'] else 'no'} |"
        )
    return "\n".join(lines) + "\n"


def write_csv(comparison, path: Path) -> None:
    metrics = comparison.metrics
    header = ["model", *metrics, "parameters", "size_bytes", "base_size_bytes", "texts_per_second"]
    header += [f"{m}_{end}" for m in metrics for end in ("low", "high")]
    with outputs.atomic_path(path) as tmp, open(tmp, "w", encoding="utf-8", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(header)
        for r in comparison.rows:
            bounds = [x for m in metrics for x in comparison.intervals[r.name][m]]
            size = "" if r.size_bytes is None else r.size_bytes
            base = "" if r.base_size_bytes is None else r.base_size_bytes
            values = [_number(r.scores[m]) for m in metrics]
            speed = f"{r.texts_per_second:.1f}"
            parameters = "" if r.parameters is None else r.parameters
            writer.writerow([r.name, *values, parameters, size, base, speed, *(_number(x) for x in bounds)])


def bar_chart(comparison, path: Path) -> None:
    import numpy as np

    plt = plots.pyplot()
    metrics, rows = comparison.metrics, comparison.rows
    width = 0.8 / len(rows)
    fig, ax = plt.subplots(figsize=(max(6.0, 1.1 * len(metrics) * len(rows) ** 0.5 + 2), 4.2))
    for i, r in enumerate(rows):
        values = np.array([r.scores[m] for m in metrics], dtype=float)
        low = np.array([comparison.intervals[r.name][m][0] for m in metrics])
        high = np.array([comparison.intervals[r.name][m][1] for m in metrics])
        error = np.clip(np.vstack([values - low, high - values]), 0, None)
        x = np.arange(len(metrics)) + (i - (len(rows) - 1) / 2) * width
        ax.bar(x, values, width, yerr=error, capsize=3, label=r.name)
    ax.set_xticks(np.arange(len(metrics)), metrics, rotation=20, ha="right")
    bottom = min(comparison.intervals[r.name][m][0] for r in rows for m in metrics)
    top = max(comparison.intervals[r.name][m][1] for r in rows for m in metrics)
    margin = max((top - bottom) * 0.15, 1e-3)
    ax.set_ylim(bottom - margin, top + margin)  # the differences, not the distance from 0, are the point
    ax.set_title(f"{comparison.examples} examples of {Path(comparison.data).name}: {LEVEL:.0%} intervals")
    ax.legend(fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.22), ncol=min(len(rows), 3), frameon=False)
    fig.tight_layout()
    plots.save_png(fig, path)


def write_report(comparison, folder: Path) -> None:
    with outputs.atomic_text(str(folder / "report.md")) as handle:
        handle.write(markdown(comparison))
    write_csv(comparison, folder / "report.csv")
    outputs.write_json(folder / "report.json", as_dict(comparison), undefined_as_null=True)
    bar_chart(comparison, folder / "report.png")

"""What a study leaves in its output folder, rewritten after each `bertkit tune` run from the
whole study (every process's trials): trials.csv and trials.json (best first), history.png,
importances.png and best.yaml."""

from __future__ import annotations

import csv
import math
from pathlib import Path

from bertkit.config import Config, to_yaml
from bertkit.core import outputs
from bertkit.core.plots import pyplot, save_png
from bertkit.core.progress import console
from bertkit.tuning.space import with_values
from bertkit.tuning.storage import shown_url

BEST_CONFIG = "best.yaml"
BEST_BUNDLE = "best"  # best.yaml's output_dir, inside the tune output
REPORTS = ("trials.csv", "trials.json", "history.png", "importances.png", BEST_CONFIG)  # files a study writes


def trial_rows(study) -> list[dict]:
    """Every trial as a row, best first: complete trials by value, then pruned ones by their last
    value, then failed and running ones by number."""
    sign = -1 if study.direction.name == "MAXIMIZE" else 1
    rows = []
    for t in study.trials:
        state = t.state.name.lower()
        pruned_at = t.user_attrs.get("pruned_at_evaluation") if state == "pruned" else None
        if state == "pruned" and pruned_at is None and t.intermediate_values:
            pruned_at = max(t.intermediate_values)
        rows.append({
            "number": t.number,
            "state": state,
            "value": t.value if t.value is not None and not math.isnan(t.value) else None,
            "params": dict(t.params),
            "seconds": round(t.duration.total_seconds(), 1) if t.duration else None,
            "pruned_at_evaluation": pruned_at,
            "validation": t.user_attrs.get("validation"),
        })  # fmt: skip
    order = {"complete": 0, "pruned": 1}

    def key(row):
        rank = order.get(row["state"], 2)
        value = sign * row["value"] if rank < 2 and row["value"] is not None else math.inf
        return rank, value, row["number"]

    return sorted(rows, key=key)


def short_params(params: dict) -> str:
    return " ".join(f"{key.split('.')[-1]}={_number(value)}" for key, value in params.items())


def _number(value) -> str:
    return f"{value:.3g}" if isinstance(value, float) else str(value)


def write(study, cfg: Config, result, space: dict) -> Config | None:
    """The reports of the whole study into `result.output`; fills `result` in and returns the
    best trial's config (output_dir: `best/` inside the output), or None before any is complete."""
    folder = result.output
    rows = trial_rows(study)
    result.rows = rows
    complete = [r for r in rows if r["state"] == "complete"]
    best_cfg = None
    if complete:
        best = study.best_trial
        override = {"train.metric_for_best_model": result.metric} if cfg.tune.metric else {}
        best_cfg = with_values(cfg, {**best.params, **override}, output_dir=str(folder / BEST_BUNDLE))
        result.best_config = folder / BEST_CONFIG
        _write_best_yaml(best_cfg, best, result)
        result.written.append(BEST_CONFIG)
    else:
        result.notes.append("no trial is complete yet: best.yaml is written once one is")
    importances = _importances(study, rows, result)
    _write_tables(folder, rows, list(space), result, importances)
    _history_plot(rows, result, folder / "history.png")
    result.written += ["trials.csv", "trials.json", "history.png"]
    if importances:
        _importance_plot(importances, result.metric, folder / "importances.png")
        result.written.append("importances.png")
    else:  # one from an earlier run of the study would disagree with trials.json: it is tune's own file
        (folder / "importances.png").unlink(missing_ok=True)
    return best_cfg


def _write_best_yaml(best_cfg: Config, best, result) -> None:
    head = [
        f"# bertkit tune: the best trial of study '{result.study}' (trial {best.number}, validation "
        f"{result.metric} {best.value:.6g}).",
        f"# Train it with `bertkit train {best_cfg.task} --config {result.output / BEST_CONFIG}`: with the same",
        "# seed and data it reproduces that score. Relative paths are from the folder tune ran in.",
        "",
    ]
    with outputs.atomic_text(str(result.output / BEST_CONFIG)) as handle:
        handle.write("\n".join(head) + to_yaml(best_cfg))


def _write_tables(folder: Path, rows: list[dict], keys: list[str], result, importances) -> None:
    keys = [*keys, *sorted({k for r in rows for k in r["params"]} - set(keys))]  # params of other configs too
    with outputs.atomic_text(str(folder / "trials.csv")) as handle:
        writer = csv.writer(handle)
        writer.writerow(["number", "state", result.metric, *keys, "seconds", "pruned_at_evaluation"])
        for r in rows:
            params = [r["params"].get(k, "") for k in keys]
            writer.writerow([r["number"], r["state"], _cell(r["value"]), *params, _cell(r["seconds"]),
                             _cell(r["pruned_at_evaluation"])])  # fmt: skip
    best = next((r for r in rows if r["state"] == "complete"), None)
    outputs.write_json(folder / "trials.json", {
        "study": result.study,
        "storage": shown_url(result.storage),
        "metric": result.metric,
        "direction": result.direction,
        "best": best and {"number": best["number"], "value": best["value"], "params": best["params"]},
        "importances": importances,
        "notes": result.notes,
        "trials": rows,
    }, undefined_as_null=True)  # fmt: skip


def _cell(value) -> str:
    return "" if value is None else str(value)


def _importances(study, rows: list[dict], result) -> dict | None:
    """Each parameter's share of the metric's variance (fANOVA, seeded), or None with a note."""
    complete = sum(r["state"] == "complete" for r in rows)
    if complete < 2:
        note = f"parameter importances need 2 or more complete trials ({complete} so far): no importances.png"
        result.notes.append(note)
        return None
    import optuna

    values = {round(r["value"], 12) for r in rows if r["state"] == "complete" and r["value"] is not None}
    if len(values) < 2:
        result.notes.append(f"all {complete} complete trials score the same: no parameter made a difference to "
                            "measure, no importances.png")  # fmt: skip
        return None
    try:
        evaluator = optuna.importance.FanovaImportanceEvaluator(seed=0)
        found = optuna.importance.get_param_importances(study, evaluator=evaluator)
    except (RuntimeError, ValueError) as err:  # e.g. no parameter varied across the complete trials
        result.notes.append(f"parameter importances could not be computed ({err}): no importances.png")
        return None
    return {key: round(float(share), 4) for key, share in found.items()}


def _history_plot(rows: list[dict], result, path: Path) -> None:
    """Each trial's value by trial number (pruned ones at their last evaluation), and the best so far."""

    plt = pyplot()
    fig, ax = plt.subplots(figsize=(7, 4))
    ordered = sorted(rows, key=lambda r: r["number"])
    styles = {"complete": {"color": "tab:blue", "marker": "o"}, "pruned": {"color": "tab:gray", "marker": "x"}}
    for state, style in styles.items():
        points = [(r["number"], r["value"]) for r in ordered if r["state"] == state and r["value"] is not None]
        if points:
            ax.scatter(*zip(*points, strict=True), label=state, **style)
    better = max if result.direction == "maximize" else min
    steps, best = [], None
    for r in ordered:
        if r["state"] == "complete" and r["value"] is not None:
            best = r["value"] if best is None else better(best, r["value"])
        if best is not None:
            steps.append((r["number"], best))
    if steps:
        ax.step(*zip(*steps, strict=True), where="post", color="tab:green", label="best so far")
    if not rows or not (steps or any(r["value"] is not None for r in rows)):
        said = "no trials yet" if not rows else "no trial gave a value (every one failed)"
        ax.text(0.5, 0.5, said, ha="center", va="center", transform=ax.transAxes)
    ax.set_xlabel("trial")
    ax.set_ylabel(f"validation {result.metric}")
    ax.set_title(f"Study {result.study}: optimisation history")
    ax.grid(alpha=0.3)
    if ax.get_legend_handles_labels()[0]:
        ax.legend()
    fig.tight_layout()
    save_png(fig, path)


def _importance_plot(importances: dict, metric: str, path: Path) -> None:

    plt = pyplot()
    names = list(importances)[::-1]
    fig, ax = plt.subplots(figsize=(7, 0.5 * len(names) + 1.5))
    ax.barh(names, [importances[n] for n in names], color="tab:blue")
    for i, name in enumerate(names):
        ax.annotate(f"{importances[name]:.2f}", (importances[name], i), xytext=(3, 0), textcoords="offset points",
                    va="center", fontsize=8)  # fmt: skip
    ax.set_xlabel(f"share of the variance of validation {metric} (fANOVA)")
    ax.set_title("Parameter importances")
    fig.tight_layout()
    save_png(fig, path)
    console.print(f"parameter importances: {', '.join(f'{k} {v:.2f}' for k, v in importances.items())}")

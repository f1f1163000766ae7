"""`bertkit info --model`: a bundle's description (its bertkit.json) as name / value rows, read
without loading the model (no torch)."""

from __future__ import annotations

from pathlib import Path

from bertkit.core.adapters.base import find_base
from bertkit.core.errors import BertkitError
from bertkit.core.run_info import INFO_FILE
from bertkit.tasks.bundle import read_info
from bertkit.tasks.classify.calibration import scale_of


def summary_rows(model: str) -> list[tuple[str, str]]:
    """What the bundle at `model` is: task, labels, inputs, what training found in its data (NER's
    tag scheme), its scores, and where it came from."""

    root = Path(model)
    if not root.is_dir():
        raise BertkitError(f"--model {model}: no such folder; give a bundle written by `bertkit train`")
    info = read_info(root, complete=False)
    if info is None:
        raise BertkitError(
            f"{root / INFO_FILE} is not there: {model} is not a bertkit bundle (a plain Hugging Face folder "
            "runs as one, but has no description to show)"
        )
    rows = [("task", info.task + (f" ({info['problem_type']})" if info.get("problem_type") else ""))]
    rows.append(("runtime", info.get("runtime") or "torch"))
    if info.labels:
        shown = ", ".join(info.labels[:12]) + (f", ... ({len(info.labels)} in all)" if len(info.labels) > 12 else "")
        rows.append(("labels", shown))
    found = info.get("tag_scheme")
    if found:
        how = "detected in the training data" if found.get("detected") else "set in ner.scheme"
        repaired = sum((found.get("repaired") or {}).values())
        rows.append(("tag scheme", f"{found['scheme']} ({how}; read as IOB2, {repaired} tag(s) repaired)"))
    elif info.task == "ner":
        rows.append(("tag scheme", "not recorded (a bundle from before it was; evaluate detects it per file)"))
    rows.append(("max length", str(info.max_length)))
    contrastive = (info.get("training") or {}).get("contrastive")
    if info.get("strategy") == "contrastive" and isinstance(contrastive, dict):
        tuned = "no tuning (frozen encoder)" if contrastive.get("frozen") else f"{contrastive.get('pairs')} pairs"
        rows.append(("strategy", f"contrastive few-shot ({tuned}; {contrastive.get('head')} head on the "
                                 f"{contrastive.get('pooling', 'mean')}-pooled sentence vector)"))  # fmt: skip
    elif info.get("strategy"):
        rows.append(("strategy", str(info["strategy"])))
    calibration = info.get("calibration")
    if isinstance(calibration, dict) and calibration.get("temperatures"):
        said = f"{scale_of(calibration)}, fitted on {calibration.get('examples', '?')} validation examples"
        rows.append(("calibration", said))
    elif isinstance(calibration, dict):
        rows.append(("calibration", f"none ({calibration.get('why') or 'turned off'})"))
    columns = (("text_column", "text column"), ("text_pair_column", "pair column"), ("label_column", "label column"))
    for key, name in columns:
        if info.get(key):
            rows.append((name, str(info[key])))
    best = info.get("metric_for_best_model")
    for role, scores in (info.get("metrics") or {}).items():
        if isinstance(scores, dict) and isinstance(scores.get(best), int | float):
            rows.append((f"{role} {best}", f"{scores[best]:.4f}"))
    for key, name in (("base_model", "base model"), ("bertkit_version", "bertkit"), ("created", "created")):
        if info.get(key):
            rows.append((name, str(info[key])))
    adapter = info.get("adapter")
    if isinstance(adapter, dict):
        rows.append(("adapter", _adapter_row(root, adapter)))
    return rows


def _adapter_row(root: Path, adapter: dict) -> str:
    """An adapter bundle holds the adapter and the head only: what it runs on, and whether that base
    is here (found and its hash checked as every command does)."""

    hashed = str(adapter.get("base_hash", ""))[:19]
    shape = f"LoRA r={adapter.get('r')} on the base {adapter.get('base_model')} ({hashed}...)"
    try:
        where = find_base(root, adapter)
    except BertkitError as err:
        return f"{shape}; the base is not usable here: {err}"
    return f"{shape}; the base found at {where}"

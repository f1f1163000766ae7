"""Scores that are probabilities: temperature scaling (Guo et al., 2017), fitted on the validation
split at the end of training and kept in bertkit.json as `calibration`.

A temperature T divides the logits before softmax (single-label) or sigmoid (multi-label, one T
per label). T > 1 softens over-confident scores, T < 1 sharpens timid ones; a single-label model's
predicted class never changes, and a multi-label model's labels at the default threshold 0.5 do
not either. T is the one that minimises the negative log-likelihood of the validation labels.

`probabilities` is the one place a classifier's scores are made from its logits: predict, evaluate,
serve, explain and an ONNX or int8 export all call it, so they give the same numbers.
"""

from __future__ import annotations

import numpy as np

from bertkit.core.inference import sigmoid, softmax
from bertkit.tasks.classify.labels import MULTI, REGRESSION

TEMPERATURE = "temperature"
NONE = "none"
MIN_EXAMPLES = 20  # fewer validation examples than this: a temperature fitted on them is noise
_LOG_BOUNDS = (float(np.log(0.05)), float(np.log(20.0)))  # T from 0.05 to 20


def is_calibrated(info: dict) -> bool:
    return bool((info.get("calibration") or {}).get("temperatures"))


def temperatures(info: dict, width: int) -> np.ndarray:
    """The temperature of each logit column (ones when the bundle is not calibrated)."""
    found = (info.get("calibration") or {}).get("temperatures")
    return np.ones(width) if not found else np.asarray(found, dtype=np.float64)


def probabilities(logits, info: dict, calibrated: bool = True) -> np.ndarray:
    """The scores of `logits` (examples × labels): softmax, or a sigmoid per label for multi-label,
    of the logits divided by the bundle's temperatures (unless `calibrated` is False)."""
    logits = np.asarray(logits, dtype=np.float64)
    if calibrated:
        logits = logits / temperatures(info, logits.shape[-1])
    return sigmoid(logits) if info["problem_type"] == MULTI else softmax(logits)


def _nll_single(log_t: float, logits: np.ndarray, gold: np.ndarray) -> float:
    z = logits / np.exp(log_t)
    z = z - z.max(axis=1, keepdims=True)
    return float((np.log(np.exp(z).sum(axis=1)) - z[np.arange(len(gold)), gold]).mean())


def _nll_binary(log_t: float, logits: np.ndarray, gold: np.ndarray) -> float:
    z = logits / np.exp(log_t)
    # -log sigmoid(z) = logaddexp(0, -z), and -log(1 - sigmoid(z)) = logaddexp(0, z)
    return float(np.where(gold > 0, np.logaddexp(0, -z), np.logaddexp(0, z)).mean())


def _best(nll, logits, gold) -> float | None:
    """The temperature minimising `nll`, or None when the validation data cannot place it: a
    temperature on its bound (0.05 or 20) says the data would push it further (one class only,
    or a model that is always right or always wrong there)."""
    from scipy.optimize import minimize_scalar

    found = minimize_scalar(nll, bounds=_LOG_BOUNDS, args=(logits, gold), method="bounded")
    if min(abs(found.x - edge) for edge in _LOG_BOUNDS) < 1e-3:
        return None
    return round(float(np.exp(found.x)), 6)


ON_A_BOUND = "the validation data pushes the temperature to its bound (0.05 or 20)"


def fit(logits, references, info: dict) -> dict | None:
    """The `calibration` entry of bertkit.json fitted on validation `logits` and encoded
    `references`: `temperatures` (one per label), or `method: none` with `why` when the
    validation data cannot give one; None for a regression model (its score is a number, not a
    probability). A multi-label label whose validation column is all 0 or all 1, or whose
    temperature lands on a bound, keeps temperature 1 (`left_as_is` says why)."""
    problem = info["problem_type"]
    if problem == REGRESSION:
        return None
    names = list(info["labels"])
    logits = np.asarray(logits, dtype=np.float64)
    kept = {"fitted_on": "validation", "examples": len(logits)}
    if problem != MULTI:
        gold = np.asarray(references).astype(int)
        if len(set(gold.tolist())) < 2:
            why = f"the validation examples all have one label ({names[gold[0]]})"
            return {"method": NONE, "why": why, **kept}
        found = _best(_nll_single, logits, gold)
        if found is None:
            return {"method": NONE, "why": ON_A_BOUND, **kept}
        return {"method": TEMPERATURE, "temperatures": [found] * logits.shape[1], **kept}
    gold = np.asarray(references).astype(int).reshape(logits.shape)
    temperatures, left = [], {}
    for k, name in enumerate(names):
        column = gold[:, k]
        found = None if column.min() == column.max() else _best(_nll_binary, logits[:, k], column)
        if found is None:
            left[name] = "every validation example has it" if column.min() == 1 else (
                "no validation example has it" if column.max() == 0 else ON_A_BOUND)  # fmt: skip
        temperatures.append(1.0 if found is None else found)
    if len(left) == len(names):
        return {"method": NONE, "why": "no label's temperature could be fitted: " + "; ".join(
            f"{n}: {w}" for n, w in left.items()), **kept}  # fmt: skip
    return {"method": TEMPERATURE, "temperatures": temperatures, **kept, **({"left_as_is": left} if left else {})}


def scale_of(calibration: dict) -> str:
    """The temperatures in a few words: one number, or the range over the labels."""
    found = calibration["temperatures"]
    if min(found) == max(found):
        return f"temperature {found[0]:.3g}"
    return f"temperatures {min(found):.3g} to {max(found):.3g} (one per label)"

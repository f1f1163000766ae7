"""Scores that are probabilities: temperature scaling (Guo et al., 2017), fitted on the validation
split at the end of training and kept in bertkit.json as `calibration`.

A temperature T divides the logits before softmax (single-label) or sigmoid (multi-label, one T
per label). T > 1 softens over-confident scores, T < 1 sharpens timid ones; a single-label model's
predicted class never changes, and a multi-label model's labels at the default threshold 0.5 do
not either. T is the one that minimises the negative log-likelihood of the validation labels.

A single-label model with enough validation examples (`ISOTONIC_MIN`) may also get a confidence
map: isotonic regression (scikit-learn's) of "the predicted label is right" on the tempered top
score, for a model whose miscalibration is not one temperature's shape (too sure at middling
scores, too timid at high ones). It is kept only when it calibrates better on validation data it
was not fitted on (`_isotonic_wins`: the two halves of the validation split, each fitted on the
other). The top score is mapped, the other labels share what is left in their proportions, and
the map is held above the second label's share, so the predicted label still never changes.

`probabilities` is the one place a classifier's scores are made from its logits: predict, evaluate,
serve, explain and an ONNX or int8 export all call it, so they give the same numbers.
"""

from __future__ import annotations

import numpy as np

from bertkit.core import metrics
from bertkit.core.inference import sigmoid, softmax
from bertkit.tasks.classify.labels import MULTI, REGRESSION

TEMPERATURE = "temperature"
TEMPERATURE_AND_MAP = "temperature+isotonic"
NONE = "none"
MIN_EXAMPLES = 20  # fewer validation examples than this: a temperature fitted on them is noise
ISOTONIC_MIN = 200  # fewer than this: no confidence map (a step function fitted on them is noise)
_LOG_BOUNDS = (float(np.log(0.05)), float(np.log(20.0)))  # T from 0.05 to 20


def check(calibration, labels: int) -> str | None:
    """What is wrong with a bundle's `calibration` entry (one a hand or a tool changed), or None."""
    if calibration is None:
        return None
    if not isinstance(calibration, dict):
        return "must be an object"
    found = calibration.get("temperatures")
    if found is not None:
        numbers = isinstance(found, list) and all(
            isinstance(t, int | float) and not isinstance(t, bool) and np.isfinite(t) and t > 0 for t in found
        )
        if not numbers or len(found) != labels:
            return f"'temperatures' must be {labels} positive numbers, one per label"
    mapped = calibration.get("confidence_map")
    if mapped is not None:
        x, y = (mapped.get("x"), mapped.get("y")) if isinstance(mapped, dict) else (None, None)
        ok = isinstance(x, list) and isinstance(y, list) and len(x) == len(y) >= 1 and all(
            isinstance(v, int | float) and not isinstance(v, bool) and 0 <= v <= 1 for v in x + y
        )  # fmt: skip
        if not ok or any(b < a for v in (x, y) for a, b in zip(v, v[1:], strict=False)):
            return ("'confidence_map' must hold 'x' and 'y', lists of numbers in [0, 1] of one length, both "
                    "rising")  # fmt: skip
        if found is None:
            return "a 'confidence_map' needs its 'temperatures'"
    return None


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
    if info["problem_type"] == MULTI:
        return sigmoid(logits)
    scores = softmax(logits)
    mapped = (info.get("calibration") or {}).get("confidence_map") if calibrated else None
    return scores if not mapped else mapped_scores(scores, mapped)


def mapped_scores(scores: np.ndarray, mapped: dict) -> np.ndarray:
    """`scores` (rows × labels) with each row's top score put through the confidence map (the
    isotonic regression's knots, read by linear interpolation) and the rest shared by the other
    labels in their proportions; the top score is kept at or above what keeps it the top."""
    scores = np.asarray(scores, dtype=np.float64)
    if scores.shape[-1] < 2:
        return scores
    rows = np.arange(len(scores))
    top = scores.argmax(axis=-1)
    best = scores[rows, top]
    # what the others hold, summed one by one (1 - best loses it to rounding when best is near 1)
    others = scores.copy()
    others[rows, top] = 0.0
    rest = others.sum(axis=-1)
    second = np.partition(scores, -2, axis=-1)[:, -2]
    floor = np.divide(second, rest + second, out=np.full_like(best, 1.0 / scores.shape[-1]),
                      where=(rest + second) > 0)  # fmt: skip
    # just above the floor: a tie would hand the top to whichever label comes first
    new = np.minimum(np.maximum(np.interp(best, mapped["x"], mapped["y"]), floor + 1e-6), 1.0)
    share = np.divide(1.0 - new, rest, out=np.zeros_like(best), where=rest > 0)
    out = scores * share[:, None]
    alone = rest <= 0  # the top had it all: the others share what the map leaves, equally
    if alone.any():
        out[alone] = ((1.0 - new[alone]) / (scores.shape[-1] - 1))[:, None]
    out[rows, top] = new
    return out


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
    `references`: `temperatures` (one per label; a single-label model's are one number) and
    maybe a `confidence_map`, or `method: none` with `why` when the validation data cannot give
    one; None for a regression model (its score is a number, not a probability). A multi-label
    label whose validation column is all 0 or all 1, or whose temperature lands on a bound, keeps
    temperature 1 (`left_as_is` says why)."""
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
        fitted = {"method": TEMPERATURE, "temperatures": [found] * logits.shape[1], **kept}
        if len(gold) >= ISOTONIC_MIN and _isotonic_wins(logits, gold):
            fitted["method"] = TEMPERATURE_AND_MAP
            fitted["confidence_map"] = _confidence_map(softmax(logits / found), gold)
        return fitted
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


def _confidence_map(scores: np.ndarray, gold: np.ndarray) -> dict:
    """Isotonic regression of "the top label is right" on the top score, as its knots."""
    from sklearn.isotonic import IsotonicRegression

    best, right = scores.max(axis=-1), (scores.argmax(axis=-1) == gold).astype(float)
    fitted = IsotonicRegression(y_min=1.0 / scores.shape[-1], y_max=1.0, out_of_bounds="clip").fit(best, right)
    return {"x": [round(float(v), 6) for v in fitted.X_thresholds_],
            "y": [round(float(v), 6) for v in fitted.y_thresholds_]}  # fmt: skip


def _ece(scores: np.ndarray, gold: np.ndarray) -> float:
    return metrics.load("calibration").compute(probabilities=scores, references=gold)["ece"]


def _isotonic_wins(logits: np.ndarray, gold: np.ndarray) -> bool:
    """Does a confidence map on top of the temperature calibrate better than the temperature
    alone on examples neither was fitted on? Each half of the validation split (seeded) fits
    both, the other half scores them (ECE); the map wins on the mean of the two."""
    order = np.random.default_rng(0).permutation(len(gold))
    halves = (order[: len(order) // 2], order[len(order) // 2 :])
    alone, mapped = [], []
    for fit_on, score_on in (halves, halves[::-1]):
        t = _best(_nll_single, logits[fit_on], gold[fit_on]) or 1.0
        tempered = softmax(logits / t)
        knots = _confidence_map(tempered[fit_on], gold[fit_on])
        alone.append(_ece(tempered[score_on], gold[score_on]))
        mapped.append(_ece(mapped_scores(tempered[score_on], knots), gold[score_on]))
    return float(np.mean(mapped)) < float(np.mean(alone))


def scale_of(calibration: dict) -> str:
    """The temperatures in a few words: one number, or the range over the labels."""
    found = calibration["temperatures"]
    said = f"temperature {found[0]:.3g}" if min(found) == max(found) else (
        f"temperatures {min(found):.3g} to {max(found):.3g} (one per label)")  # fmt: skip
    if calibration.get("confidence_map"):
        said += " and a confidence map (isotonic, better on held-out halves of the validation split)"
    return said

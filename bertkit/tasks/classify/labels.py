"""Labels read from the data: one reading of a label in every format and command (`label_name`),
the problem type guessed from the label column (single-label, multi-label, regression), label
names in a stable order, and the values no label can be (an object, a list inside a list, NaN or
infinity) refused with their line.

The one reading (docs/data.md, "Labels"): a label is text, white space around it dropped; a label
that is a number, written as a number (JSON `1.0`) or as text (CSV `01`, `1.0`, `+1`, `1e0`), is
that number in its shortest form (`1`; `0.50` is `0.5`); JSON `true` and `false` are the labels
`true` and `false`. So a file reads the same as CSV, TSV, JSON lines or Parquet, in `train`,
`evaluate`, `predict`'s gold column, `tune`, `distill` and the few-shot route alike.
"""

from __future__ import annotations

import math
import re
from decimal import Decimal, InvalidOperation

from bertkit.core import data as data_mod
from bertkit.core.errors import BertkitError

SINGLE, MULTI, REGRESSION = "single_label", "multi_label", "regression"
PROBLEM_TYPES = (SINGLE, MULTI, REGRESSION)


NUMBER = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?")


def label_name(value) -> str:
    """A label as bertkit reads it, whatever the file's format: its text, white space around it
    dropped, a number in its shortest form (`1`, `1.0`, `01` and `1e0` are `1`), JSON's booleans as
    `true` and `false`. Values no label can be are refused before this (`check_label_values`)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    text = repr(value) if isinstance(value, float) else str(value).strip()
    if isinstance(value, int | float) or NUMBER.fullmatch(text):
        try:
            number = Decimal(text)
        except InvalidOperation:
            return text
        if not number.is_finite():
            return text
        if abs(number.adjusted()) > EXPONENT_LIMIT:  # written out it would be huge: one short form
            return _scientific(number)
        if number == number.to_integral_value():
            return str(int(number))
        return format(number.normalize(), "f")
    return text


EXPONENT_LIMIT = 100  # beyond 1e100 (or below 1e-100) a number label is written 1.5e-400, not in full


def _scientific(number: Decimal) -> str:
    """`number` as `[-]d[.ddd]e±N`, its trailing zeros dropped, whatever its size (no context
    rounds or clamps it: `1e-20000000` stays itself, not 0)."""
    sign, digits, _ = number.as_tuple()
    shown = "".join(map(str, digits)).rstrip("0") or "0"
    mantissa = shown[0] + ("." + shown[1:] if len(shown) > 1 else "")
    return f"{'-' if sign else ''}{mantissa}e{number.adjusted()}"


def given_labels(labels: list, key: str = "data.labels") -> list[str]:
    """A given label list, each name read as the data's labels are (`label_name`: white space
    around it dropped, `1.0` as `1`), so that the data's labels are found in it; names that are
    blank, or the same once read, are an error naming `key`."""
    names = [label_name(x) for x in labels]
    for raw, name in zip(labels, names, strict=True):
        if not name:
            raise BertkitError(f"{key}: {raw!r} is a blank label name; give each label a name")
    twice = next((n for i, n in enumerate(names) if n in names[:i]), None)
    if twice is not None:
        raise BertkitError(f"{key}: '{twice}' is listed twice (once white space around names is dropped)")
    return names


def guess_problem(values: list, separator: str | None) -> str:
    if separator or any(isinstance(v, list) for v in values):
        return MULTI
    numbers = [_number(v) for v in values]
    if all(n is not None for n in numbers) and any(not float(n).is_integer() for n in numbers):
        return REGRESSION
    return SINGLE


def _number(value) -> float | None:
    if isinstance(value, bool):
        return None
    try:
        number = float(value)
    except (TypeError, ValueError, OverflowError):
        return None
    return number if math.isfinite(number) else None


def split_multi(values: list, separator: str | None) -> list[list[str]]:
    out = []
    for v in values:
        if isinstance(v, list):
            out.append([label_name(x) for x in v])
        elif v is None or str(v).strip() == "":
            out.append([])
        else:
            out.append([label_name(x) for x in str(v).split(separator)] if separator else [label_name(v)])
    return out


def ordered_labels(values: list, places: list[str], column: str) -> list[str]:
    for value, place in zip(values, places, strict=True):
        if value is None or str(value).strip() == "":
            raise BertkitError(f"{place}: the example has an empty '{column}'; label every example")
    names = {label_name(v) for v in values}
    numeric = all(_number(n) is not None for n in names)
    return sorted(names, key=(lambda n: float(n)) if numeric else None)


def unknown_label(name: str, labels: list[str], place: str, given: bool) -> None:
    if given:
        raise BertkitError(
            f"{place}: label '{name}' is not in data.labels ({', '.join(labels)}). Add it to data.labels, "
            "or fix the data."
        )
    raise BertkitError(
        f"{place}: label '{name}' does not occur in the training data "
        f"(known labels: {', '.join(labels)}). Fix the data, or list every label in data.labels."
    )


def non_finite(value) -> bool:
    """Whether a label reads as NaN or infinity: a float that is, or text that Python's float()
    turns into one (`nan`, ` -Infinity `, and also `1e999` or a 400-digit number, which overflow)."""
    if isinstance(value, bool):
        return False
    try:
        return not math.isfinite(float(value if isinstance(value, int | float) else str(value).strip()))
    except OverflowError:  # a whole number too large for a float
        return True
    except ValueError:
        return False


def check_label_values(values: list, places: list[str], column: str, separator: str | None = None) -> None:
    """Refuse, naming the example's place, what no label can be: an object (it trained as its
    Python spelling), a list inside a multi-label example's list, and NaN or infinity, which would
    silently turn into a class of their own (or NaN weights, or make a regression file look like
    classification). Each label of a multi-label example (a list, or text cut at `separator`) is
    checked."""
    for value, place in zip(values, places, strict=True):
        if isinstance(value, dict):
            raise BertkitError(
                f"{place}: '{column}' is an object ({_short(value)}); a label is a name or a number (a list of "
                "them for multi-label data): fix this example"
            )
        if isinstance(value, list):
            ones = value
        elif separator and isinstance(value, str):
            ones = value.split(separator)
        else:
            ones = [value]
        for one in ones:
            if isinstance(one, list | dict):
                raise BertkitError(
                    f"{place}: '{column}' holds {_short(one)} among its labels; each label of a multi-label "
                    "example is a name or a number: fix this example"
                )
            if non_finite(one):
                raise BertkitError(
                    f"{place}: '{column}' is {one!r}, not a finite number or a label name; fix or remove this example"
                )


def encode_labels(values: list, info: dict, places: list[str] | str) -> list:
    """Label ids (or rows of 0/1, or numbers); `places` says where each example is."""
    problem, labels = info["problem_type"], info["labels"]
    if isinstance(places, str):  # a split's name
        places = [f"{places} data, example {i + 1}" for i in range(len(values))]
    if problem == REGRESSION:
        return data_mod.as_numbers(values, places)
    check_label_values(values, places, info.get("label_column") or "label", info.get("label_separator"))
    # a bundle's names read as the data's are (one written before this reading, `01`, still finds `01`)
    index = {**{label_name(name): i for i, name in enumerate(labels)}, **{name: i for i, name in enumerate(labels)}}
    given = info.get("labels_given", False)
    if problem == MULTI:
        out = []
        for i, group in enumerate(split_multi(values, info.get("label_separator"))):
            row = [0.0] * len(labels)
            for name in group:
                if name not in index:
                    unknown_label(name, labels, places[i], given)
                row[index[name]] = 1.0
            out.append(row)
        return out
    out = []
    for i, v in enumerate(values):
        name = label_name(v)
        if v is None or name == "":
            raise BertkitError(f"{places[i]}: the example has no label; label every example")
        if name not in index:
            unknown_label(name, labels, places[i], given)
        out.append(index[name])
    return out


def _short(value) -> str:
    import json

    text = json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= 60 else text[:57] + "..."

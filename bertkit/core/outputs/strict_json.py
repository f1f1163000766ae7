"""JSON as the standard defines it: no NaN, no Infinity.

Python's `json` writes `NaN`, `Infinity` and `-Infinity`, which no strict reader (JavaScript's
`JSON.parse`, jq, Go, Rust's serde) accepts. Every JSON file and line bertkit writes goes through
`dumps`, which refuses them with an error naming the field. Where a number can honestly be
undefined (a metric on data that does not define it, such as the perplexity of text with no
masked token), the writer is asked for `undefined_as_null`: the value becomes `null` and the
object that held it gains `"undefined": {KEY: "NaN"}` (or `"Infinity"`, `"-Infinity"`), which says
which numbers were not defined and what they were.
"""

from __future__ import annotations

import json
import math
import numbers

from bertkit.core.errors import BertkitError

UNDEFINED = "undefined"  # the key that lists a JSON object's undefined numbers


class NotFinite(BertkitError):
    """A value to write as JSON is NaN or infinite."""


def _bad(value) -> bool:
    """NaN or an infinity, as a Python float or any other real number type (numpy's float32)."""
    return isinstance(value, numbers.Real) and not isinstance(value, numbers.Integral) and not math.isfinite(value)


def _name(value: float) -> str:
    return "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")


def first_nonfinite(data, path: str = "") -> tuple[str, float] | None:
    """(dotted path, value) of the first NaN or infinity in `data`, or None."""
    if _bad(data):
        return path or "the value", data
    if isinstance(data, dict):
        items = data.items()
    elif isinstance(data, list | tuple):
        items = enumerate(data)
    else:
        return None
    for key, value in items:
        found = first_nonfinite(value, f"{path}.{key}" if path else str(key))
        if found:
            return found
    return None


def dumps(data, where: str = "", **options) -> str:
    """`json.dumps(data, **options)` that refuses NaN and infinities with a `NotFinite` naming the
    field (`where` says whose: a file, a record)."""
    try:
        return json.dumps(data, allow_nan=False, **options)
    except ValueError:
        check(data, where)
        raise


def check(data, where: str = "") -> None:
    """Raise `NotFinite`, naming the field and `where`, if `data` holds NaN or an infinity."""
    found = first_nonfinite(data)
    if found is None:
        return
    field, value = found
    place = f"{where}: " if where else ""
    raise NotFinite(
        f"{place}'{field}' is {_name(value)}, which JSON cannot hold; nothing was written. "
        "A model that gives NaN or infinite outputs is broken (train it again with a lower learning rate)"
    )


def undefined_as_null(data):
    """`data` with every NaN and infinity replaced by None, each object that held one gaining
    `"undefined": {KEY: "NaN"}` (see the module)."""
    if isinstance(data, dict):
        out, undefined = {}, {}
        for key, value in data.items():
            if _bad(value):
                out[key], undefined[str(key)] = None, _name(value)
            else:
                out[key] = undefined_as_null(value)
        if undefined:
            earlier = out.get(UNDEFINED)
            out[UNDEFINED] = {**earlier, **undefined} if isinstance(earlier, dict) else undefined
        return out
    if isinstance(data, list | tuple):
        return [None if _bad(v) else undefined_as_null(v) for v in data]
    return data

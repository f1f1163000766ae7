"""A request's body, read and parsed no more leniently than `bertkit predict` reads its input.

The body is read as it arrives and refused (413) as soon as it passes `--max-body-bytes`, whether
or not the client said its length first. It is then parsed as strict JSON: bytes that are not
UTF-8, a key given twice in one object (a JSON reader would silently keep the last), a lone
UTF-16 surrogate (`"\\ud800"`, half a character, on which tokenizers fail), a number that is no
finite float (`NaN`, `Infinity`, `1e999`, which Python's JSON reader accepts), an integer too
long to read, or nesting deeper than `MAX_DEPTH` levels are each a 422 whose `loc` says where in
the body it is, wherever it is (a text, an `id`, a key, a field nested in a record). What the
server answers is strict JSON too (`strict_json`).
"""

from __future__ import annotations

import json
import math
import re
from typing import Any


class Refused(Exception):
    """An answer other than 200: the status and FastAPI's `detail`."""

    def __init__(self, status: int, detail):
        super().__init__(detail)
        self.status, self.detail = status, detail


def problem(where: tuple | list, message: str, kind: str = "value_error") -> dict:
    """One problem in the shape FastAPI gives its own validation errors."""
    return {"loc": list(where), "msg": message, "type": kind}


async def read_body(request, limit: int) -> bytes:
    """The body, at most `limit` bytes: a larger one is refused before it is read (its
    Content-Length says so) or as soon as the bytes read pass the limit (sent in chunks)."""
    announced = request.headers.get("content-length")
    if announced is not None and announced.strip().isdigit() and int(announced) > limit:
        raise Refused(413, _too_large(f"{int(announced):,} bytes", limit))
    parts, size = [], 0
    async for part in request.stream():
        size += len(part)
        if size > limit:
            raise Refused(413, _too_large(f"more than {limit:,} bytes", limit))
        parts.append(part)
    return b"".join(parts)


def _too_large(size: str, limit: int) -> str:
    return f"the request body is {size}; at most {limit:,} bytes (--max-body-bytes)"


def parse_body(raw: bytes) -> Any:
    """The body as JSON, or a 422 naming where it breaks the rules above."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as err:
        raise Refused(422, [problem(["body"], f"not UTF-8 text ({err.reason} at byte {err.start})")]) from None
    try:
        value = json.loads(
            text, object_pairs_hook=_object, parse_constant=_constant, parse_float=_float, parse_int=_int
        )
    except json.JSONDecodeError as err:
        where = f"line {err.lineno}, column {err.colno}"
        message = f"not valid JSON: {err.msg} ({where})"
        raise Refused(422, [problem(["body", err.pos], message, "json_invalid")]) from None
    except RecursionError:
        raise Refused(422, [problem(["body"], "the JSON is nested too deeply")]) from None
    found = _first_problem(value)
    if found is not None:
        path, message = found
        raise Refused(422, [problem(["body", *path], message)])
    return value


class _Unreadable:
    """A value the body may not hold, kept in its place so that its path can be named."""

    def __init__(self, message: str):
        self.message = message


class _Twice(dict):
    """An object with a key given twice."""

    key: str = ""


def _object(pairs: list) -> dict:
    record = dict(pairs)
    if len(record) == len(pairs):
        return record
    seen: set = set()
    twice = _Twice(record)
    twice.key = next(key for key, _ in pairs if key in seen or seen.add(key))
    return twice


def _constant(name: str) -> _Unreadable:  # NaN, Infinity, -Infinity
    return _Unreadable(f"{name} is not a number JSON allows; give a finite number (or null)")


def _float(spelled: str):
    number = float(spelled)
    if math.isfinite(number):
        return number
    return _Unreadable(f"{spelled[:40]} is too large for a number (it reads as infinity); give a finite number")


def _int(spelled: str):
    try:
        return int(spelled)
    except ValueError:  # more digits than Python reads (sys.get_int_max_str_digits)
        return _Unreadable(f"an integer of {len(spelled):,} digits is too long to read")


_SURROGATE = re.compile("[\ud800-\udfff]")
MAX_DEPTH = 64  # levels of nesting a body may have: ample for records, and the answer can always be written


def _surrogate(text: str) -> str | None:
    found = _SURROGATE.search(text)
    if found is None:
        return None
    return (
        f"the JSON escape \\u{ord(found.group()):04x} is half of a UTF-16 surrogate pair, not a character; "
        "fix or remove it"
    )


def _first_problem(value) -> tuple[list, str] | None:
    """(path, message) of the first thing in `value`, in the body's order, that it may not hold."""
    stack: list[tuple[list, Any]] = [([], value)]
    while stack:
        path, item = stack.pop()
        if len(path) > MAX_DEPTH:
            return path[:MAX_DEPTH], f"the JSON is nested too deeply (more than {MAX_DEPTH} levels)"
        if isinstance(item, _Unreadable):
            return path, item.message
        if isinstance(item, str):
            message = _surrogate(item)
            if message:
                return path, message
        elif isinstance(item, dict):
            for key in item:  # the path stops at the object: the answer never repeats half a character
                message = _surrogate(key)
                if message:
                    return path, f"a key of this object: {message}"
            if isinstance(item, _Twice):
                return path, (
                    f"the key '{item.key}' appears twice in one JSON object; a JSON reader would keep only the "
                    "last value and silently drop the other. Keep one"
                )
            stack.extend(([*path, key], item[key]) for key in reversed(item))
        elif isinstance(item, list):
            stack.extend(([*path, index], item[index]) for index in reversed(range(len(item))))
    return None


def strict_json(value) -> str:
    """`value` as strict JSON: a number that is not finite (a bug, never an answer) is an error
    here, not `NaN` or `Infinity` in the answer, which JSON does not allow."""
    return json.dumps(value, ensure_ascii=False, allow_nan=False)

"""Reading a data file as bytes or as numbered UTF-8 lines (plain or gzip, or standard input), with
errors that name the file and line: the layer every format reader (readers, conll, squad) stands
on.
"""

from __future__ import annotations

import codecs
import gzip
import json
import re
import sys
import zlib
from collections.abc import Iterator
from pathlib import Path

from bertkit.core.errors import BertkitError

STDIN = "-"
GZIP_MAGIC = b"\x1f\x8b"


def open_binary(path: str):
    """The file (or stdin) to read in bytes; a missing, unreadable or folder path is a clear error."""
    if path == STDIN:
        return sys.stdin.buffer
    if Path(path).is_dir():
        raise BertkitError(f"{path} is a folder; give a file (or a format that reads folders)")
    try:
        if path.endswith(".gz"):
            return gzip.open(path, "rb")
        handle = open(path, "rb")
        if handle.read(2) != GZIP_MAGIC:
            handle.seek(0)
            return handle
        handle.close()  # gzip data under a name that does not say so (`train`, `train.dat`)
        return gzip.open(path, "rb")
    except FileNotFoundError:
        raise BertkitError(f"data file not found: {path}") from None
    except OSError as err:
        raise BertkitError(f"cannot read {path}: {err.strerror or err}") from None


def text_lines(path: str, encoding: str = "utf-8", lines: bool = True) -> Iterator[tuple[int, str]]:
    """(line number, decoded line) pairs; a line that is not in `encoding` is an error naming its
    line. Lines end at \n only (a \r\n keeps its \r for the caller to strip), never at the
    other characters Python's `splitlines` breaks on (U+2028, U+0085, form feed), which are text.
    Where the lines are records (`lines`), a file whose line breaks are all a lone \r (old Mac
    files) is an error: read by \n it would be one record, and every result would be lost but one."""
    name = "<stdin>" if path == STDIN else path
    handle = open_binary(path)
    try:
        for number, raw in enumerate(handle, start=1):
            try:
                text = raw.decode(encoding)
            except UnicodeDecodeError as err:
                label = "UTF-8" if codecs.lookup(encoding).name == "utf-8" else encoding
                raise BertkitError(
                    f"{name}:{number}: not {label} text ({err.reason} at byte {err.start} of the "
                    "line). Name the file's encoding where the command reads one (--encoding; in a config "
                    "data.encoding, or `encoding:` on the source; e.g. latin-1), or convert the file, e.g. "
                    "`iconv -f latin1 -t utf-8 IN > OUT`."
                ) from None
            if number == 1:
                text = text.removeprefix("\ufeff")
                if lines and not text.endswith("\n") and text.rstrip("\r").count("\r") >= 1:
                    raise BertkitError(
                        f"{name}: its lines end in a carriage return alone (old Mac line breaks), so it reads "
                        "as one line. Convert them, e.g. `tr '\\r' '\\n' < IN > OUT`."
                    )
            yield number, text
    except (OSError, EOFError, zlib.error) as err:  # e.g. a truncated or fake .gz
        raise BertkitError(f"{name}: cannot read: {err}") from None
    finally:
        if handle is not sys.stdin.buffer:
            handle.close()


_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")


_SURROGATE = re.compile("[\ud800-\udfff]")


def check_characters(where: str, raw: str, value) -> None:
    """JSON can spell a lone UTF-16 surrogate (`"\\ud800"`), which is no character: tokenizers
    fail on it. An error naming the place, not a crash deep inside the tokenizer."""
    if not _SURROGATE_ESCAPE.search(raw):
        return
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            found = _SURROGATE.search(item)
            if found:
                raise BertkitError(
                    f"{where}: the JSON escape \\u{ord(found.group()):04x} is half of a UTF-16 surrogate pair, not "
                    "a character; fix or remove it"
                )
        elif isinstance(item, dict):
            stack += [*item.keys(), *item.values()]
        elif isinstance(item, list):
            stack += item


class _TwiceError(ValueError):
    def __init__(self, key: str, pairs: list):
        super().__init__(key)
        self.key, self.pairs = key, pairs


def _unique_keys(pairs: list) -> dict:
    record = dict(pairs)
    if len(record) != len(pairs):
        seen: set = set()
        raise _TwiceError(next(k for k, _ in pairs if k in seen or seen.add(k)), pairs)
    return record


def parse_json(text: str, where: str):
    """`json.loads`, except that an object with a key given twice is an error naming `where`:
    JSON readers keep the last value and silently drop the first (`{"text": A, "text": B}`
    would be read as B alone)."""
    try:
        return json.loads(text, object_pairs_hook=_unique_keys)
    except _TwiceError as err:
        pairs = (f"{json.dumps(k, ensure_ascii=False)}: {json.dumps(v, ensure_ascii=False)}" for k, v in err.pairs)
        shown = "{" + ", ".join(pairs) + "}"
        shown = shown if len(shown) <= 80 else shown[:77] + "..."
        raise BertkitError(
            f"{where}: the key '{err.key}' appears twice in one JSON object ({shown}); a JSON reader would keep "
            "only the last value and silently drop the other. Keep one"
        ) from None


def load_json(path: str):
    """A whole JSON document; a syntax error names its line, a key given twice the file."""
    text = "".join(line for _, line in text_lines(path, lines=False))
    try:
        data = parse_json(text, path)
    except json.JSONDecodeError as err:
        raise BertkitError(f"{path}:{err.lineno}: not valid JSON: {err.msg} (column {err.colno})") from None
    check_characters(path, text, data)
    return data

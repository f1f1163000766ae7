"""The checks of an index's `index.json` (`index_folder` reads it): every field of the right type
and in its range, the sums that tie them together, and every number finite. Whatever fails is
damage, and the message says to rebuild the index."""

from __future__ import annotations

import json
import math
import re

from bertkit.core.errors import BertkitError
from bertkit.core.pooling import POOLINGS
from bertkit.embeddings import ann
from bertkit.embeddings.ann_params import KIND_NAMES, LIMITS

FLAT, FORMAT = 1, 2  # index.json's layouts: 1 the data files beside it, 2 in the generation it names
GENERATION_NAME = re.compile(r"gen-([0-9]{6,18})")  # ASCII digits, few enough to be a number
REBUILD = "rebuild the index (`bertkit index build ... --overwrite`)"


def damaged(where, what: str) -> BertkitError:
    return BertkitError(f"{where}: {what}; the index is damaged: {REBUILD}")


def _field(
    path, record: dict, key: str, kind, where: str = "", optional: bool = False, least: int | None = None,
    most: int | None = None,
):  # fmt: skip
    """record[key] checked to be of `kind` (bool is not a number), from `least` to `most` if a number."""
    label = repr(f"{where}{key}")
    if key not in record:
        if optional:
            return None
        raise damaged(path, f"lacks {label}")
    value = record[key]
    wrong = not isinstance(value, kind) or (isinstance(value, bool) and bool not in kind)
    if optional and value is None:
        return None
    if wrong:
        names = {
            int: "a whole number",
            float: "a number",
            str: "text",
            dict: "an object",
            list: "a list",
            bool: "true or false",
        }
        wanted = " or ".join(names.get(k, k.__name__) for k in kind)
        raise damaged(path, f"{label} is {json.dumps(value)}, not {wanted}")
    if least is not None and value < least:
        raise damaged(path, f"{label} is {value}, below {least}")
    if most is not None and value > most:
        raise damaged(path, f"{label} is {value}, above {most:,}, the most bertkit uses")
    return value


def _finite(path, value, where: str = "") -> None:
    """Every number in index.json finite: NaN and Infinity (which Python's JSON reader accepts, as it
    reads 1e999 as infinity) are not JSON, and bertkit never writes them."""
    if isinstance(value, float) and not math.isfinite(value):
        raise damaged(path, f"{where or 'it'!r} is {value}, not a finite number")
    if isinstance(value, dict):
        for key, item in value.items():
            _finite(path, item, f"{where}.{key}" if where else str(key))
    elif isinstance(value, list):
        for number, item in enumerate(value):
            _finite(path, item, f"{where}[{number}]")


MOST_TOKENS = 1 << 20  # settings.max_length: the model's own limit is checked as it loads
MOST_DIMENSION = 1 << 20


def check_info(path, info) -> None:
    """index.json's fields, their types and their sums: what every reader relies on."""
    if not isinstance(info, dict):
        raise damaged(path, "is not a JSON object")
    _finite(path, info)
    fmt = _field(path, info, "format", (int,))
    if fmt not in (FLAT, FORMAT):
        raise BertkitError(
            f"{path}: index format {fmt!r}, which this bertkit does not read (it reads {FLAT} and {FORMAT}); "
            "build the index again with this version"
        )
    if fmt == FLAT:
        if "generation" in info:
            raise damaged(path, f"holds 'generation', which an index of format {FLAT} (its files beside it) has not")
    else:
        name = _field(path, info, "generation", (str,))
        match = GENERATION_NAME.fullmatch(name)
        if not match or int(match[1]) < 1:
            raise damaged(
                path, f"'generation' is {json.dumps(name)}, not the name of a generation folder beside it "
                "(gen-000001, gen-000002, ...)"
            )  # fmt: skip
    _field(path, info, "model", (str,))
    settings = _field(path, info, "settings", (dict,))
    if _field(path, settings, "pooling", (str,), "settings.") not in POOLINGS:
        raise damaged(path, f"'settings.pooling' is {settings['pooling']!r}, not one of {', '.join(POOLINGS)}")
    _field(path, settings, "normalize", (bool,), "settings.")
    _field(path, settings, "max_length", (int,), "settings.", least=1, most=MOST_TOKENS)
    _field(path, info, "identity", (str,), optional=True)
    _field(path, info, "dimension", (int,), least=1, most=MOST_DIMENSION)
    count = _field(path, info, "count", (int,), least=0)
    lines = _field(path, info, "lines", (int,), least=count)
    _check_ann(path, _field(path, info, "ann", (dict,)))
    corpora = _field(path, info, "corpora", (list,))
    first = texts = 0
    for number, corpus in enumerate(corpora):
        where = f"corpora[{number}]."
        if not isinstance(corpus, dict):
            raise damaged(path, f"corpora[{number}] is {json.dumps(corpus)}, not an object")
        _field(path, corpus, "path", (str,), where)
        if _field(path, corpus, "first", (int,), where) != first:
            raise damaged(path, f"'{where}first' is {corpus['first']}, where the corpora before it end at {first}")
        first += _field(path, corpus, "lines", (int,), where, least=0)
        texts += _field(path, corpus, "texts", (int,), where, least=0)
    if (first, texts) != (lines, count):
        raise damaged(path, f"its corpora hold {first} lines and {texts} texts, where it counts {lines} and {count}")
    _field(path, info, "text_column", (str,), optional=True)
    if _field(path, info, "metric", (str,), optional=True) not in (None, "cosine"):
        raise damaged(path, f"'metric' is {json.dumps(info['metric'])}, not cosine, the only metric bertkit writes")
    for key in ("texts_sha256", "vectors_sha256"):  # absent only in the flat layout, of bertkit before checksums
        if _field(path, info, key, (str,), optional=fmt == FLAT) is not None and not re.fullmatch(
            r"[0-9a-f]{64}", info[key]
        ):
            raise damaged(path, f"{key!r} is not a SHA-256 checksum")


def _check_ann(path, described: dict) -> None:
    """index.json's "ann": a kind bertkit writes and the settings of that kind, each in its range
    (`ann_params.LIMITS`: a value past it would overflow FAISS's integers or exhaust the memory)."""
    kind = _field(path, described, "kind", (str,), "ann.")
    if kind not in KIND_NAMES:
        raise damaged(path, f"'ann.kind' is {json.dumps(kind)}, not one of {', '.join(KIND_NAMES)}")
    ivf = ann.is_ivf(described)
    for key in ("lists", "probes") if ivf else ("m", "ef_construction", "ef_search"):
        optional = key != ("probes" if ivf else "ef_search")  # the breadth a search uses; the rest are a record
        _field(path, described, key, (int,), "ann.", optional=optional, least=1, most=LIMITS[key])
    if kind != "HNSW":
        _field(path, described, "rescore", (int, float), "ann.", optional=True, least=1, most=1000)
    recall = _field(path, described, "check_recall", (int, float), "ann.", optional=True, least=0)
    if recall is not None and recall > 1:
        raise damaged(path, f"'ann.check_recall' is {recall}, above 1")
    for key in ("library", "version"):
        _field(path, described, key, (str,), "ann.", optional=True)
    _field(path, described, "quantized", (bool,), "ann.", optional=True)

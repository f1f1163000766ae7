"""Loading the splits of a run into `datasets.Dataset`s with the columns the task expects."""

from __future__ import annotations

import math
import random
import re
from collections import defaultdict
from typing import TYPE_CHECKING

from bertkit.core import hub
from bertkit.core.data.class_folders import class_files_records
from bertkit.core.data.formats import Layout, detect_format, told_by
from bertkit.core.data.readers import located_records
from bertkit.core.data.records import kind_hint, text_value
from bertkit.core.data.sniffing import sniff_format
from bertkit.core.data_settings import DataSource
from bertkit.core.errors import BertkitError, did_you_mean
from bertkit.core.progress import console
from bertkit.core.text_columns import fill_joined, parts_of

if TYPE_CHECKING:
    from bertkit.core.run_config import RunConfig

_HTML = re.compile(r"<[^>]{1,40}>")
WHERE = "_where"  # a column saying where each example came from (file:line), for messages


def load_source(source: DataSource, text_column: str = "text", label_column: str = "label", text_join: str = " "):
    """Read one split, local or from the Hub, as a `datasets.Dataset` (with a `WHERE` column).
    `text_column` and `label_column` name the text and the label (one file per class fills the
    label in); a text column that joins several (`title + description`) is made from them."""
    import datasets


    if source.hub:
        ds = _load_hub(source)
        if text_column not in ds.column_names and all(p in ds.column_names for p in parts_of(text_column)):
            ds = ds.map(lambda row: fill_joined(dict(row), text_column, text_join))
        return ds.add_column(WHERE, [f"{source.describe()}, row {i + 1}" for i in range(len(ds))])

    layout = Layout.of(source)
    if source.files:
        located = [
            (where, fill_joined(record, text_column, text_join))
            for where, record in class_files_records(source.files, text_column, label_column, layout.encoding)
        ]
    else:
        fmt = table_format(source)
        located = list(located_records(source.path, fmt, text_column, label_column, layout=layout, text_join=text_join))
    if not located:
        raise BertkitError(f"{source.describe()}: no examples in this file")
    # every record with every column: Dataset.from_list takes its columns from the first record
    # alone, and would silently drop a field that the first record happens to leave out
    names = list(dict.fromkeys(key for _, record in located for key in record))
    records = [{**dict.fromkeys(names), **record, WHERE: where} for where, record in located]
    try:
        return datasets.Dataset.from_list(records)
    except (TypeError, ValueError, OverflowError, datasets.exceptions.DatasetGenerationError) as err:
        odd = odd_record(records)
        raise BertkitError(odd or f"{source.describe()}: records have inconsistent fields: {err}") from None
    except Exception as err:  # pyarrow's own type errors (mixed types in one column)
        if type(err).__module__.startswith("pyarrow"):
            odd = odd_record(records)
            raise BertkitError(
                odd or f"{source.describe()}: a column mixes types (e.g. numbers and lists): {err}"
            ) from None
        raise


def table_format(source: DataSource) -> str:
    """The format of a table source. A `.txt` (or `.text`) file given `columns` is a table without a
    header: it is read as TSV when every line has the same number of tabs (the UCI sentiment
    files' `text<TAB>label`), as the log says."""

    fmt = detect_format(source.path, source.format)
    if fmt == "text" and source.format is None and source.columns and source.path != "-":
        sniffed, why = sniff_format(source.path, source.encoding or "utf-8")
        if sniffed in ("tsv", "jsonl"):

            console.print(f"{source.path}: read as {sniffed} ({why})")
            return sniffed
    return fmt


def _kind(value) -> str:
    if isinstance(value, bool):
        return "true/false"
    if isinstance(value, int | float):
        return "a number"
    return {str: "text", list: "a list", dict: "a JSON object"}.get(type(value), type(value).__name__)


def odd_record(records: list[dict]) -> str | None:
    """Where a column first holds another kind of value than its earlier records (text among
    numbers, say: `"nan"` in a column of scores), or a whole number too large to store, as a
    message naming the record; None when no such record is found."""
    first: dict[str, tuple[str, str]] = {}
    for record in records:
        where = record.get(WHERE, "")
        for key, value in record.items():
            if key == WHERE or value is None:
                continue
            if isinstance(value, int) and not isinstance(value, bool) and not -(2**63) <= value < 2**63:
                shown = f"{str(value)[:20]}..."
                return f"{where}: '{key}' is {shown}, a whole number too large to store; write it as a decimal"
            kind = _kind(value)
            seen = first.setdefault(key, (kind, where))
            if seen[0] != kind:
                return (
                    f"{where}: '{key}' holds {kind} ({value!r:.40}), but earlier records hold {seen[0]} "
                    f"(first in {seen[1]}); give every record the same kind of value"
                )
    return None


def _load_hub(source: DataSource):
    import datasets


    what = f"data set '{source.hub}'"
    if not hub.offline() and not hub.reachable():
        hub.require(
            what,
            "If it was downloaded before, add --offline to use the cached copy; otherwise "
            "download it to a local file and set its path.",
        )
    try:
        ds = datasets.load_dataset(source.hub, source.config, split=source.split, revision=source.revision)
    except Exception as err:  # datasets raises many types for "not cached", "no such split", ...
        if hub.offline():
            raise BertkitError(
                f"{what} is not in the local cache, and offline mode is on (HF_HUB_OFFLINE=1). Download it "
                f"to a local file and set its path instead. ({type(err).__name__}: {err})"
            ) from None
        raise BertkitError(f"{source.describe()}: {err}") from None
    # Class ids become their names, so labels look the same whatever the origin.
    for name, feature in ds.features.items():
        if isinstance(feature, datasets.ClassLabel):
            ds = ds.map(
                lambda batch, n=name, f=feature: {
                    n: [f.int2str(v) if v is not None and v >= 0 else None for v in batch[n]]
                },
                batched=True,
                features=_with_string(ds.features, name),
            )
    return ds


def _with_string(features, name):
    import datasets

    updated = features.copy()
    updated[name] = datasets.Value("string")
    return updated


def columns_of(ds) -> list[str]:
    """The data's own columns (not bertkit's bookkeeping)."""
    return [c for c in ds.column_names if c != WHERE]


def require_columns(ds, columns: dict[str, str | None], where: str, options: dict[str, str] | None = None) -> None:
    """Fail clearly when a configured column is not in the data, listing those that are. `options`
    names the command-line option that sets each column (`evaluate`), where a config key does not."""
    present = columns_of(ds)
    for key, column in columns.items():
        # a joined column made from some of its parts only: one part is never there (a typo?)
        partial = 0 < sum(part not in present for part in parts_of(column or "")) < len(parts_of(column or ""))
        if column and (column not in present or partial):

            missing = next((part for part in parts_of(column) if part not in present), column)
            setting = (options or {}).get(key) or f"data.{key}"
            joined = f" (one of the columns {setting} joins)" if missing != column else ""
            hint = did_you_mean(missing, present)
            raise BertkitError(
                f"{where}: no column '{missing}'{joined or f' (set by {setting})'}{hint}. Columns there: "
                f"{', '.join(c for c in present if c != column)}." + kind_hint(present) + _headerless_hint(present)
            )


def _format_hint(source: DataSource) -> str:
    """What format a file without the needed columns was read as, and how to read it otherwise."""
    if not source.path or source.format or source.files:
        return ""

    if detect_format(source.path) == "text":
        return (
            f" It was read as plain text lines (one text a line, from {told_by(source.path)}). If its lines hold "
            "columns, say so "
            "on the source: {path: ..., format: tsv, columns: [text, label]} (or format: csv)."
        )
    return ""


def _headerless_hint(present: list[str]) -> str:
    """A header that reads like data (a number, a long sentence) is likely a file without one."""
    if any(name.replace(".", "").replace("-", "").isdigit() or len(name.split()) > 4 for name in present):
        return (
            " Its first row looks like data, not a header: if the file has none, name its columns in order with "
            "data.columns (or `columns:` on the source), e.g. columns: [label, title, description]."
        )
    return ""


def column(ds, name: str) -> list:
    """A column's values as a plain list, read in one go through Arrow (`ds[name]` is a lazy column
    that formats row by row: a second or more for each pass over a large split)."""
    return ds.select_columns([name]).to_dict()[name]


def check_texts(ds, names, role: str) -> None:
    """Text columns hold text (a string; a number or null is read as text): a list, a JSON object
    or true/false is an error naming its `file:line` (`records.text_value`). Checked as the split
    is read, so training and `bertkit inspect` (which read through the same `Training.load`) agree."""

    for name in (n for n in names if n and n in ds.column_names):
        values = column(ds, name)
        for i, value in enumerate(values):
            if isinstance(value, bool) or not isinstance(value, str | int | float | type(None)):
                text_value(value, places(ds, role)[i], name)


def places(ds, role: str) -> list[str]:
    """Where each example of a split came from: `file:line`, or its position in the split."""
    if WHERE in ds.column_names:
        return column(ds, WHERE)
    return [f"{role} data, example {i + 1}" for i in range(len(ds))]


def as_numbers(values, where: str | list[str], what: str = "label") -> list[float]:
    """Labels or scores as finite floats; one that is not (text, NaN, infinity) is an error naming
    its example (`where`: one place per value, or the split's name)."""
    out = []
    for i, value in enumerate(values):
        place = where[i] if isinstance(where, list) else f"{where} data, example {i + 1}"
        try:
            number = float(value)
        except OverflowError:  # a whole number too large for a float (10**400 in JSON)
            number = math.inf
        except (TypeError, ValueError):
            raise BertkitError(f"{place}: {what} {value!r} is not a number") from None
        if not math.isfinite(number):
            raise BertkitError(f"{place}: {what} {value!r} is not a finite number; fix or remove this example")
        out.append(number)
    return out


def split_by_class(classes: list, share: float, seed: int) -> tuple[list[int], list[int]]:
    """Indices (kept, held out): about `share` of each class held out, in a seeded random choice;
    a class with a single example stays whole in the kept part."""
    rng = random.Random(seed)
    members: dict = defaultdict(list)
    for index, name in enumerate(classes):
        members[name].append(index)
    want = max(1, round(share * len(classes)))
    held: list[int] = []
    for name in sorted(members, key=str):
        group = members[name]
        rng.shuffle(group)
        take = min(len(group) - 1, round(share * len(group)))
        held += group[:take]
    leftover = sorted(set(range(len(classes))) - set(held))
    rng.shuffle(leftover)
    spare = [i for i in leftover if len(members[classes[i]]) > 1]  # never the last of a class
    counts = {name: sum(1 for i in held if classes[i] == name) for name in members}
    for index in spare:
        if len(held) >= want:
            break
        if counts[classes[index]] < len(members[classes[index]]) - 1:
            held.append(index)
            counts[classes[index]] += 1
    if not held:
        raise BertkitError(
            "every class of the training data has a single example: none can be held out for validation. "
            "Add data, or give data.validation"
        )
    kept = sorted(set(range(len(classes))) - set(held))
    rng.shuffle(kept)  # as a random split would give them
    return kept, sorted(held)


def clean_text(text: str) -> str:
    return " ".join(_HTML.sub(" ", text).split())


def load_splits(cfg: RunConfig, read=None, stratify=None):
    """train / validation (/ test) for a training run, with limits and cleaning applied.

    `read(source, role)` returns one split as a Dataset; by default a table with the configured
    text, pair and label columns. `stratify(train)` gives a class per training example: the
    validation share split off (when no validation data is given) then takes the same share of
    every class, and never all of one.
    """
    import datasets

    data = cfg.data
    if data.train is None:
        raise BertkitError("the config has no data.train: set it to a file path or {hub: NAME}")
    columns = {
        "text_column": data.text_column,
        "text_pair_column": data.text_pair_column,
        "label_column": data.label_column,
    }

    def read_table(source, role):
        ds = load_source(source, data.text_column, data.label_column, data.text_join)
        try:
            require_columns(ds, columns, f"{source.describe()} ({role} data)")
        except BertkitError as err:
            raise BertkitError(f"{err}{_format_hint(source)}") from None
        check_texts(ds, (data.text_column, data.text_pair_column), role)
        return ds

    splits = {}
    for role in ("train", "validation", "test"):
        source = getattr(data, role)
        if source is not None:
            splits[role] = (read or read_table)(source, role)
    if "validation" not in splits:
        if len(splits["train"]) * data.validation_split < 1:
            raise BertkitError(
                f"only {len(splits['train'])} training example(s): too few to split off a validation "
                f"share of {data.validation_split}. Add data, or give data.validation"
            )
        classes = stratify(splits["train"]) if stratify else [0] * len(splits["train"])
        kept, held = split_by_class(classes, data.validation_split, cfg.train.seed)
        splits["train"], splits["validation"] = splits["train"].select(kept), splits["train"].select(held)
    for role, limit in (
        ("train", data.max_train_samples),
        ("validation", data.max_eval_samples),
        ("test", data.max_eval_samples),
    ):
        if limit and role in splits and len(splits[role]) > limit:
            # by default a seeded sample, not the first rows: files are often sorted by label
            chosen = splits[role] if data.sample == "first" else splits[role].shuffle(seed=cfg.train.seed)
            splits[role] = chosen.select(range(limit))
    if data.strip_html:
        text_columns = [c for c in (data.text_column, data.text_pair_column) if c and c in splits["train"].column_names]
        for role, ds in splits.items():
            splits[role] = ds.map(
                lambda batch: {c: [clean_text(t) for t in batch[c]] for c in text_columns},
                batched=True,
            )
    for role, ds in splits.items():
        if len(ds) == 0:
            raise BertkitError(f"the {role} data is empty")
    return datasets.DatasetDict(splits)

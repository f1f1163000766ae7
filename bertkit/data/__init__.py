"""Loading the splits of a run into `datasets.Dataset`s with the columns the task expects."""

from __future__ import annotations

import re

from bertkit.config import Config, DataSource
from bertkit.errors import BertkitError, did_you_mean

_HTML = re.compile(r"<[^>]{1,40}>")


def load_source(source: DataSource, cfg: Config):
    """Read one split, local or from the Hub, as a `datasets.Dataset`."""
    import datasets

    if source.hub:
        return _load_hub(source)
    from bertkit.data.readers import read_records

    records = list(read_records(source.path, source.format, cfg.data.text_column, cfg.data.label_column))
    if not records:
        raise BertkitError(f"{source.describe()}: no examples in this file")
    try:
        return datasets.Dataset.from_list(records)
    except (TypeError, ValueError, datasets.exceptions.DatasetGenerationError) as err:
        raise BertkitError(f"{source.describe()}: records have inconsistent fields: {err}") from None
    except Exception as err:  # pyarrow's own type errors (mixed types in one column)
        if type(err).__module__.startswith("pyarrow"):
            raise BertkitError(f"{source.describe()}: a column mixes types (e.g. numbers and lists): {err}") from None
        raise


def _load_hub(source: DataSource):
    import datasets

    from bertkit import hub

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


def require_columns(ds, columns: dict[str, str | None], where: str) -> None:
    """Fail clearly when a configured column is not in the data, listing those that are."""
    for key, column in columns.items():
        if column and column not in ds.column_names:
            hint = did_you_mean(column, ds.column_names)
            raise BertkitError(
                f"{where}: no column '{column}' (set by data.{key}){hint}. Columns there: {', '.join(ds.column_names)}"
            )


def as_numbers(values, where: str, what: str = "label") -> list[float]:
    """Labels or scores as floats; one that is not a number is an error naming its example."""
    out = []
    for i, value in enumerate(values):
        try:
            out.append(float(value))
        except (TypeError, ValueError):
            raise BertkitError(f"{where} data, example {i + 1}: {what} {value!r} is not a number") from None
    return out


def clean_text(text: str) -> str:
    return " ".join(_HTML.sub(" ", text).split())


def load_splits(cfg: Config, read=None):
    """train / validation (/ test) for a training run, with limits and cleaning applied.

    `read(source, role)` returns one split as a Dataset; by default a table with the configured
    text, pair and label columns.
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
        ds = load_source(source, cfg)
        require_columns(ds, columns, f"{source.describe()} ({role} data)")
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
        parts = splits["train"].train_test_split(test_size=data.validation_split, seed=cfg.train.seed)
        splits["train"], splits["validation"] = parts["train"], parts["test"]
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

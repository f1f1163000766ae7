"""The `data:` section and the sources it names (`DataSource`: a file or a Hub data set), with the
checks of how their files are laid out."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, PrivateAttr, field_validator, model_validator

from bertkit.core.settings import Section, home_path, known_encoding, named_columns
from bertkit.core.text_columns import joined_name


class LayoutChecks(Section):
    """The checks of the keys that say how files are laid out (`columns`, `encoding`), shared by a
    source and the data section that gives its defaults."""

    @field_validator("columns", check_fields=False)
    @classmethod
    def _named_columns(cls, value: list[str] | None) -> list[str] | None:
        return named_columns(value)

    @field_validator("encoding", check_fields=False)
    @classmethod
    def _known_encoding(cls, value: str | None) -> str | None:
        return known_encoding(value)


class DataSource(LayoutChecks):
    """Where one split comes from: a local file or folder, one file per class, or a Hugging Face Hub
    data set; and how its files are laid out when the extension does not say it all."""

    path: str | None = Field(None, description="local file or folder")
    files: dict[str, str] | None = Field(
        None,
        description="one file per class, one example per line: {label: path, ...} (e.g. rt-polarity.pos / .neg)",
    )
    format: str | None = Field(
        None,
        description="csv, tsv, jsonl, json, parquet, text, conll or folder; from the extension (or the content, "
        "when the extension does not say) when null",
    )
    columns: list[str] | None = Field(
        None, description="names of the columns of a CSV / TSV file without a header row; data.columns when null"
    )
    header: bool | None = Field(
        None,
        description="whether a CSV / TSV file starts with a header row; null: yes, unless `columns` is given (then "
        "a first row that repeats those names is skipped)",
    )
    encoding: str | None = Field(None, description="the files' text encoding, e.g. latin-1; data.encoding when null")
    hub: str | None = Field(None, description="Hub data set name, e.g. imdb (needs internet)")
    config: str | None = Field(None, description="Hub data set configuration name")
    split: str = Field("train", description="Hub split name, e.g. train, test, validation")
    revision: str | None = Field(None, description="Hub revision (branch, tag or commit)")
    _inherited: frozenset = PrivateAttr(default_factory=frozenset)  # keys filled in from the data section

    @model_validator(mode="before")
    @classmethod
    def _from_string(cls, value: Any) -> Any:
        return {"path": value} if isinstance(value, str) else value

    @model_validator(mode="after")
    def _one_origin(self) -> DataSource:
        if sum(x is not None for x in (self.path, self.hub, self.files)) != 1:
            raise ValueError("give one of a file path, `files: {label: path}` or `hub: NAME`")
        if self.files is not None and not self.files:
            raise ValueError("`files` is empty; map each label to its file, e.g. {positive: pos.txt}")
        return self


    @field_validator("path")
    @classmethod
    def _home(cls, value: str | None) -> str | None:
        if value is not None and not value.strip():
            raise ValueError("an empty path; give the file's path")
        return home_path(value)

    @field_validator("files")
    @classmethod
    def _homes(cls, value: dict[str, str] | None) -> dict[str, str] | None:
        return {label: home_path(path) for label, path in value.items()} if value else value

    def describe(self) -> str:
        if self.hub:
            extra = f", config {self.config}" if self.config else ""
            return f"hub data set '{self.hub}' (split {self.split}{extra})"
        if self.files:
            return ", ".join(f"{path} ({label})" for label, path in self.files.items())
        return self.path or ""

    def local_paths(self) -> list[str]:
        """The local files (or folder) this source reads."""
        return list(self.files.values()) if self.files else [self.path] if self.path else []

    def with_defaults(self, data: DataConfig) -> DataSource:
        """This source with the data section's layout filled in where it says nothing of its own."""
        given = {key: getattr(data, key) for key in ("columns", "header", "encoding") if getattr(self, key) is None}
        filled = self.model_copy(update=given)
        filled._inherited = frozenset(key for key, value in given.items() if value is not None)
        return filled

    def columns_inherited(self) -> bool:
        """Whether `columns` came from the data section (it then names only its CSV / TSV files)."""
        return "columns" in self._inherited


class DataConfig(LayoutChecks):
    train: DataSource | None = Field(None, description="training data: a file path or {hub: ...}")
    validation: DataSource | None = Field(None, description="validation data; split off from train when null")
    test: DataSource | None = Field(None, description="test data, scored once after training")
    text_column: str = Field(
        "text",
        description="column holding the text; a list of columns (e.g. [title, description]) joins them with "
        "text_join",
    )
    text_join: str = Field(" ", description="what goes between the texts of several text columns")
    text_pair_column: str | None = Field(
        None, description="column holding the second text of a pair (e.g. NLI hypothesis)"
    )
    label_column: str = Field("label", description="column holding the label")
    negative_column: str | list[str] | None = Field(
        None,
        description="embed only: column(s) of hard negatives for each pair; a column may hold one text or a list "
        "of texts (as `bertkit mine-negatives` writes them)",
    )
    labels: list[str] | None = Field(
        None, description="label names in order; discovered from the training data when null"
    )
    label_separator: str | None = Field(None, description="multi-label only: separator inside a string label, e.g. '|'")
    unlabeled: list[str] | None = Field(
        None,
        description="distill only: unlabelled text file(s) (one text a line, or a table with text_column) that the "
        "teacher labels; soft targets only",
    )

    @field_validator("negative_column")
    @classmethod
    def _negative_names(cls, value: str | list[str] | None) -> str | list[str] | None:
        names = [value] if isinstance(value, str) else value
        if names is not None and (not names or any(not n.strip() for n in names)):
            raise ValueError("name the column(s) of negatives, e.g. negatives or [neg1, neg2], or leave it out")
        return value

    @field_validator("unlabeled", mode="before")
    @classmethod
    def _one_or_more(cls, value: Any) -> Any:
        return [value] if isinstance(value, str) else value

    @field_validator("unlabeled")
    @classmethod
    def _unlabeled_homes(cls, value: list[str] | None) -> list[str] | None:
        if value is not None and (not value or any(not str(p).strip() for p in value)):
            raise ValueError("give one or more file paths, or leave data.unlabeled out")
        return [home_path(p) for p in value] if value else value

    columns: list[str] | None = Field(
        None, description="names of the columns of CSV / TSV files without a header row, in order"
    )
    header: bool | None = Field(
        None, description="whether CSV / TSV files start with a header row; null: yes, unless columns is given"
    )
    encoding: str = Field("utf-8", description="text encoding of the data files, e.g. latin-1")

    @field_validator("text_column", mode="before")
    @classmethod
    def _joined_columns(cls, value: Any) -> Any:
        # several text columns become one name, "title + description", that the readers fill in
        if isinstance(value, list):
            if len(value) < 1 or not all(isinstance(v, str) and v.strip() for v in value):
                raise ValueError("list the text columns by name, e.g. [title, description]")
            return joined_name(value)
        return value


    @model_validator(mode="after")
    def _sources_take_the_layout(self) -> DataConfig:
        for role in ("train", "validation", "test"):
            source = getattr(self, role)
            if source is not None:
                filled = source.with_defaults(self)
                if filled != source:
                    object.__setattr__(self, role, filled)
        return self

    @field_validator("labels", mode="before")
    @classmethod
    def _numbers_as_names(cls, value):
        """`labels: [0, 1]`: label names written as numbers, as the data's own 0 / 1 labels are
        named (a whole number in any spelling, 1 or 1.0, as `1`)."""
        if isinstance(value, list):
            return [
                str(int(x) if isinstance(x, float) and x.is_integer() else x)
                if isinstance(x, int | float) and not isinstance(x, bool)
                else x
                for x in value
            ]
        return value

    @field_validator("labels")
    @classmethod
    def _distinct_labels(cls, value: list[str] | None) -> list[str] | None:
        if value is not None:
            seen = set()
            twice = [x for x in value if x in seen or seen.add(x)]
            if twice:
                raise ValueError(f"'{twice[0]}' is listed twice; each label once, in order")
            if not value:
                raise ValueError("an empty list; list the labels, or leave data.labels out to discover them")
        return value

    @field_validator("label_separator")
    @classmethod
    def _real_separator(cls, value: str | None) -> str | None:
        if value is not None and value.strip() == "":
            raise ValueError("empty or blank; write the separator in quotes, e.g. label_separator: '|'")
        return value

    validation_split: float = Field(
        0.1, gt=0.0, lt=1.0, description="share of train held out when no validation is given"
    )
    max_train_samples: int | None = Field(None, ge=1, description="use at most this many")
    max_eval_samples: int | None = Field(None, ge=1, description="evaluate on at most this many")
    sample: Literal["random", "first"] = Field(
        "random", description="how max_*_samples picks: a seeded random sample, or the first rows"
    )
    strip_html: bool = Field(False, description="replace HTML tags such as IMDb's <br /> with spaces")
    # on by default: a second run on the same data skips tokenizing, and training reads memory-mapped
    # features; the entries cost disk only (docs/data.md, "The feature cache")
    cache: bool = Field(
        True, description="keep tokenized features on disk ($BERTKIT_CACHE/features) reused while nothing changes"
    )
    streaming: bool = Field(
        False, description="mlm-adapt only: read the training corpus lazily as training goes (needs train.max_steps)"
    )

"""The teacher: its bundle read and checked, the config of the teacher's task that the student's
run is delegated to, the unlabelled texts it labels, and its logits on every training feature."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from bertkit.core import data as data_mod
from bertkit.core.data import WHERE
from bertkit.core.data.records import blank
from bertkit.core.data_settings import DataSource
from bertkit.core.errors import BertkitError
from bertkit.core.inference import chunks, forward
from bertkit.core.progress import bar, console
from bertkit.tasks import get_task, record
from bertkit.tasks.bundle import open_bundle, read_info
from bertkit.tasks.classify.labels import given_labels
from bertkit.tasks.classify.settings import ClassifyConfig
from bertkit.tasks.distill.settings import DistillConfig
from bertkit.tasks.ner.tags import entity_types

if TYPE_CHECKING:
    pass

TEACHER_TASKS = ("classify", "ner")
# keys of the data section that follow the teacher's config when the distill config leaves them out
FOLLOWED_DATA_KEYS = ("text_column", "text_join", "text_pair_column", "label_column", "label_separator")


@dataclass(frozen=True)
class Teacher:
    path: str
    info: dict  # the teacher's bertkit.json
    task: object  # the teacher task's implementation (classify's or ner's TASK)
    cfg: object  # the run's config as a config of the teacher's task


def teacher_of(cfg) -> Teacher:
    """The teacher named by distill.teacher, and the run's config in its task's terms."""

    path = cfg.section(DistillConfig).teacher
    folder = Path(path)
    info = read_info(folder) if folder.is_dir() else None
    accepted = "a bundle written by `bertkit train classify` or `bertkit train ner` (a folder with bertkit.json)"
    if info is None:
        raise BertkitError(f"distill.teacher: {path} is not a bertkit bundle; give {accepted}")
    if info["task"] not in TEACHER_TASKS:
        raise BertkitError(f"distill.teacher: {path} is a {info['task']} bundle; give {accepted}")
    task = get_task(info["task"])
    return Teacher(str(folder.resolve()), info.to_dict(), task, task_config(cfg, info.to_dict()))


def task_config(cfg, info: dict):
    """The distill config as a config of the teacher's task: its labels and problem type, its
    task section and data columns where the distill config says nothing, its max_length when
    model.max_length is left out."""


    raw = cfg.dump()
    given = (info.get("config") or {}) if isinstance(info.get("config"), dict) else {}
    section = record(info["task"]).section
    own = getattr(cfg, section)
    raw[section] = {**(given.get(section) or {}), **{k: raw[section][k] for k in own.model_fields_set}}
    for key in FOLLOWED_DATA_KEYS:  # from the teacher's config, else from what its bundle records
        if key not in cfg.data.model_fields_set and key in (given.get("data") or {}):
            raw["data"][key] = given["data"][key]
        elif key not in cfg.data.model_fields_set and info.get(key) is not None:
            raw["data"][key] = info[key]
    if "max_length" not in cfg.model.model_fields_set:
        raw["model"]["max_length"] = info["max_length"]
    if info["task"] == "classify":
        given_settings = cfg.section(ClassifyConfig)
        asked = given_settings.problem_type if "problem_type" in given_settings.model_fields_set else "auto"
        if asked not in ("auto", info["problem_type"]):
            raise BertkitError(
                f"classify.problem_type: {asked}, but the teacher is {info['problem_type']}; a student solves its "
                "teacher's problem: leave the key out"
            )
        raw["classify"]["problem_type"] = info["problem_type"]
        raw["classify"]["strategy"] = "finetune"  # a student learns its teacher's outputs through the Trainer
    check_given_labels(cfg.data.labels, info)
    if info["task"] == "ner" or info.get("problem_type") != "regression":
        raw["data"]["labels"] = list(info["labels"])  # the teacher's outputs, in its order
    raw["data"]["unlabeled"] = None
    raw["task"] = info["task"]
    return type(cfg).model_validate(raw)  # the class of the config read, with every task's section


def check_given_labels(given: list[str] | None, info: dict) -> None:
    """`data.labels` given in a distill config must name the teacher's labels (the student's
    outputs are the teacher's, one for one), read as the teacher's task reads a given list: for
    ner the entity types its tags name, for classify the names. In another order they are taken
    in the teacher's (the order of the outputs), and the log says so; others are an error."""
    if given is None:
        return
    if info["task"] == "classify" and info.get("problem_type") == "regression":
        raise BertkitError(
            "data.labels: the teacher is a regression model, whose output is a number, not labels; leave "
            "data.labels out"
        )
    teachers = list(info["labels"])
    if info["task"] == "ner":

        mine, theirs, what = entity_types(given), entity_types(teachers, "the teacher's labels"), "entity types"
    else:

        mine, theirs, what = given_labels(given), teachers, "labels"
    if set(mine) != set(theirs):
        missing = [x for x in theirs if x not in mine]
        foreign = [x for x in mine if x not in theirs]
        parts = ([f"the teacher's {', '.join(missing)} missing"] if missing else []) + (
            [f"{', '.join(foreign)} not the teacher's"] if foreign else []
        )
        raise BertkitError(
            f"data.labels: {given} are not the teacher's {what} ({', '.join(theirs)}): {'; '.join(parts)}. The "
            "student's outputs are the teacher's, one for one: leave data.labels out, or list the teacher's"
        )
    if info["task"] != "ner" and mine != theirs:

        console.print(
            f"data.labels: the teacher's labels in another order; the student's outputs keep the teacher's order "
            f"({', '.join(theirs)})"
        )


def check_labels(info: dict, teacher: Teacher) -> None:
    """The student's outputs must be the teacher's, one for one."""
    if list(info["labels"]) != list(teacher.info["labels"]):
        raise BertkitError(
            f"distill: the student's labels {info['labels']} are not the teacher's {teacher.info['labels']}; "
            "the training data must use the teacher's labels"
        )


def check_pairs(info: dict, teacher: Teacher) -> None:
    """A student reads what its teacher read: pairs of texts for a teacher of pairs, single texts
    for one of single texts (the teacher scores the student's features; fed a pair it never saw,
    or one text of its pair, its outputs would teach nonsense)."""
    if teacher.info["task"] != "classify":
        return
    theirs, mine = teacher.info.get("text_pair_column"), info.get("text_pair_column")
    if bool(theirs) != bool(mine):
        said = f"reads pairs of texts (text_pair_column '{theirs}')" if theirs else "reads single texts"
        mine_said = f"pairs (data.text_pair_column '{mine}')" if mine else "single texts (data.text_pair_column null)"
        raise BertkitError(
            f"data.text_pair_column: the teacher {said}, but the student would read {mine_said}. A student reads "
            "what its teacher read: leave data.text_pair_column out to follow the teacher"
        )


# ---------------------------------------------------------------- unlabelled text


def read_unlabeled(paths: list[str] | None, teacher: Teacher) -> list[dict]:
    """The examples of data.unlabeled, read with the columns the teacher reads (its
    text_column, text_join and, for a pair teacher, text_pair_column, where the distill config
    does not set them): `{"text": ..., "pair": ...}` each (pair None for a teacher of single
    texts). A text file holds one text a line; a pair teacher needs a table with both columns,
    and a record without its second text is an error naming its file and line."""

    c = teacher.cfg.data
    pair_column = c.text_pair_column if teacher.info["task"] == "classify" else None
    found: list[dict] = []
    for path in paths or []:
        if not Path(path).is_file():
            raise BertkitError(f"data.unlabeled: {path} is not a file")
        source = DataSource(path=path).with_defaults(c)
        ds = data_mod.load_source(source, c.text_column, c.label_column, c.text_join)
        columns = data_mod.columns_of(ds)
        if c.text_column not in columns:
            raise BertkitError(
                f"data.unlabeled: {path} has no '{c.text_column}' column, the text the teacher reads "
                f"(data.text_column); columns there: {', '.join(columns)}"
            )
        if pair_column and pair_column not in columns:
            raise BertkitError(
                f"data.unlabeled: {path} has no '{pair_column}' column. The teacher reads pairs of texts "
                f"({c.text_column}, {pair_column}), so each unlabelled example needs both: give a table (CSV, TSV, "
                "JSON lines) with both columns"
            )
        texts = data_mod.column(ds, c.text_column)
        pairs = data_mod.column(ds, pair_column) if pair_column else [None] * len(texts)
        places = data_mod.places(ds, "unlabeled")
        for text, pair, where in zip(texts, pairs, places, strict=True):
            if text is None or blank(str(text)):
                continue
            if pair_column and pair is None:
                raise BertkitError(
                    f"{where}: no '{pair_column}' (the second text of the pair the teacher reads); give every "
                    "unlabelled example both texts"
                )
            found.append({"text": str(text), "pair": None if pair is None else str(pair), "where": where})
    if paths and not found:
        raise BertkitError(f"data.unlabeled: no texts in {', '.join(paths)}")
    return found


def with_unlabeled(train, unlabeled: list[dict], teacher: Teacher):
    """`train` with the unlabelled examples appended as examples of its shape, marked in an
    `UNLABELED` column, a pair teacher's second text in its pair column. Their labels are
    placeholders (the first example's label; "O" for every word) that the loss never reads: only
    the teacher's outputs teach from them."""
    import datasets


    names = train.column_names
    first = train[0]
    rows = []
    for example in unlabeled:
        text = example["text"]
        row = dict.fromkeys(names)
        if teacher.info["task"] == "ner":
            if "tokens" in names:
                words = text.split()
                row.update(tokens=words, tags=["O"] * len(words))
            else:
                row.update(text=text, entities=[])
        else:
            c = teacher.cfg.data
            row[c.text_column] = text
            if c.text_pair_column:
                row[c.text_pair_column] = example["pair"]
            row[c.label_column] = first[c.label_column]
        if WHERE in names:
            row[WHERE] = example["where"]
        rows.append(row)
    marked = train.add_column(UNLABELED, [False] * len(train))
    extra = datasets.Dataset.from_list([{**r, UNLABELED: True} for r in rows], features=marked.features)
    return datasets.concatenate_datasets([marked, extra])


UNLABELED = "distill_unlabeled"


# ---------------------------------------------------------------- the teacher's outputs


def teacher_logits(teacher: Teacher, tokenizer, features, batch_size: int) -> list:
    """The teacher's logits on every feature (a row per example; for ner a row per token, as
    long as the feature), computed once, batched, without gradients."""

    # fp32 on a GPU too: computed once, the targets are worth their digits more than the time
    model = open_bundle(teacher.path).load_model(teacher.task.auto_model, precision="fp32")
    names = [n for n in tokenizer.model_input_names if n in features.column_names]
    rows = features.select_columns(names).to_list()
    out: list = []
    with bar("teacher scoring the training data", total=len(rows)) as progress:
        for chunk in chunks(rows, 1024):
            for row, logits in zip(chunk, forward(model, tokenizer, chunk, batch_size), strict=True):
                out.append(logits[: len(row["input_ids"])] if logits.ndim == 2 else logits)
            progress.advance(progress.task_ids[0], len(chunk))
    return out

"""The teacher: its bundle read and checked, the config of the teacher's task that the student's
run is delegated to, the unlabelled texts it labels, and its logits on every training feature."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from bertkit.errors import BertkitError

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
    from bertkit.run_info import read_info
    from bertkit.tasks import get_task

    path = cfg.distill.teacher
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
    from bertkit.config import Config
    from bertkit.tasks import record

    raw = cfg.dump()
    given = (info.get("config") or {}) if isinstance(info.get("config"), dict) else {}
    section = record(info["task"]).section
    own = getattr(cfg, section)
    raw[section] = {**(given.get(section) or {}), **{k: raw[section][k] for k in own.model_fields_set}}
    for key in FOLLOWED_DATA_KEYS:
        if key not in cfg.data.model_fields_set and key in (given.get("data") or {}):
            raw["data"][key] = given["data"][key]
    if "max_length" not in cfg.model.model_fields_set:
        raw["model"]["max_length"] = info["max_length"]
    if info["task"] == "classify":
        raw["classify"]["problem_type"] = info["problem_type"]
    if info["task"] == "ner" or info.get("problem_type") != "regression":
        raw["data"]["labels"] = list(info["labels"])  # the teacher's outputs, in its order
    raw["data"]["unlabeled"] = None
    raw["task"] = info["task"]
    return Config.model_validate(raw)


def check_labels(info: dict, teacher: Teacher) -> None:
    """The student's outputs must be the teacher's, one for one."""
    if list(info["labels"]) != list(teacher.info["labels"]):
        raise BertkitError(
            f"distill: the student's labels {info['labels']} are not the teacher's {teacher.info['labels']}; "
            "the training data must use the teacher's labels"
        )


# ---------------------------------------------------------------- unlabelled text


def read_unlabeled(cfg) -> list[str]:
    """The texts of data.unlabeled: one a line (text files), or the text column of a table."""
    from bertkit import data as data_mod
    from bertkit.config import DataSource
    from bertkit.data.readers import blank

    texts: list[str] = []
    for path in cfg.data.unlabeled or []:
        if not Path(path).is_file():
            raise BertkitError(f"data.unlabeled: {path} is not a file")
        source = DataSource(path=path).with_defaults(cfg.data)
        ds = data_mod.load_source(source, cfg.data.text_column, cfg.data.label_column, cfg.data.text_join)
        column = cfg.data.text_column if cfg.data.text_column in ds.column_names else "text"
        if column not in ds.column_names:
            raise BertkitError(
                f"data.unlabeled: {path} has no '{cfg.data.text_column}' column (columns: {', '.join(ds.column_names)})"
            )
        texts += [str(t) for t in ds[column] if t is not None and not blank(str(t))]
    if cfg.data.unlabeled and not texts:
        raise BertkitError(f"data.unlabeled: no texts in {', '.join(cfg.data.unlabeled)}")
    return texts


def with_unlabeled(train, texts: list[str], teacher: Teacher):
    """`train` with the unlabelled texts appended as examples of its shape, marked in an
    `UNLABELED` column. Their labels are placeholders (the first example's label; "O" for every
    word) that the loss never reads: only the teacher's outputs teach from them."""
    import datasets

    from bertkit.data import WHERE

    names = train.column_names
    first = train[0]
    rows = []
    for i, text in enumerate(texts):
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
            row[c.label_column] = first[c.label_column]
        if WHERE in names:
            row[WHERE] = f"data.unlabeled, text {i + 1}"
        rows.append(row)
    marked = train.add_column(UNLABELED, [False] * len(train))
    extra = datasets.Dataset.from_list([{**r, UNLABELED: True} for r in rows], features=marked.features)
    return datasets.concatenate_datasets([marked, extra])


UNLABELED = "distill_unlabeled"


# ---------------------------------------------------------------- the teacher's outputs


def teacher_logits(teacher: Teacher, tokenizer, features, batch_size: int) -> list:
    """The teacher's logits on every feature (a row per example; for ner a row per token, as
    long as the feature), computed once, batched, without gradients."""
    from bertkit.bundle import open_bundle
    from bertkit.inference import chunks, forward
    from bertkit.progress import bar

    model = open_bundle(teacher.path).load_model(teacher.task.auto_model)
    names = [n for n in tokenizer.model_input_names if n in features.column_names]
    rows = features.select_columns(names).to_list()
    out: list = []
    with bar("teacher scoring the training data", total=len(rows)) as progress:
        for chunk in chunks(rows, 1024):
            for row, logits in zip(chunk, forward(model, tokenizer, chunk, batch_size), strict=True):
                out.append(logits[: len(row["input_ids"])] if logits.ndim == 2 else logits)
            progress.advance(progress.task_ids[0], len(chunk))
    return out

"""Reading QA data: SQuAD JSON (v1.1 and v2.0) and flat question/context/answers records, each
answer checked against its context and given its character start.
"""

from __future__ import annotations

from bertkit.core import data as data_mod
from bertkit.core.data.formats import Layout, detect_format
from bertkit.core.data.readers import read_records
from bertkit.core.data.records import text_value
from bertkit.core.data_settings import DataSource
from bertkit.core.errors import BertkitError, RecordError
from bertkit.core.progress import console
from bertkit.core.settings import derived_doc_stride
from bertkit.tasks.qa.settings import QaConfig


def fields_of(record: dict, qa: dict) -> dict[str, str]:
    """The names of a prediction record's question, context and id fields: the bundle's
    (`qa.question_field`, ...), or the plain names, which records built by `--question` use.
    A field that is in neither form is named as the bundle names it, for the error message."""
    names = {}
    for key in ("question", "context", "id"):
        own = qa[f"{key}_field"]
        names[key] = key if own not in record and key in record else own
    return names


def warn_unanswerable(where: str, missing: list[str]) -> None:
    if missing:
        console.print(
            f"[yellow]warning:[/yellow] {where}: {len(missing)} question(s) have no answer (first: {missing[0]}), "
            "but the model answers every question (SQuAD v1); they count as misses (see no_ans_* in the "
            "metrics). Train with qa.version_2: true to learn to abstain."
        )


def unanswerable_ids(examples) -> list[str]:
    rows = examples if isinstance(examples, list) else examples.to_list()
    return [r.get("where") or r["id"] for r in rows if not r["answers"]["text"]]


def read_examples(source: DataSource, qa: QaConfig, role: str) -> list[dict]:
    """Question records `{id, question, context, answers: {text, answer_start}, where}`, checked:
    answer starts repaired where the answer text is elsewhere in the context, answers that are
    nowhere in it dropped (with a warning), ids unique, no empty context."""
    if source.hub:
        ds = data_mod.load_source(source)
        raw = ((f"{source.describe()}, row {n}", r) for n, r in enumerate(ds, start=1))
    else:

        if source.files:
            raise BertkitError(
                f"{source.describe()}: one file per class is for classification; QA reads SQuAD "
                "JSON or question records"
            )
        fmt = detect_format(source.path, source.format)
        raw = (
            (r.pop("where", None) or f"{source.path}, record {n}", r)
            for n, r in enumerate(read_records(source.path, fmt, layout=Layout.of(source)), start=1)
        )
    examples, ids = [], {}
    repaired = dropped_answers = 0
    dropped_questions = []
    fields = {"question": qa.question_field, "context": qa.context_field, "id": qa.id_field}
    for where, record in raw:
        key, question, context = checked_record(record, fields, where, ids, default_id=str(len(examples) + 1))
        texts, starts = _answers(record, qa.answers_field, where)
        kept_texts, kept_starts = [], []
        for text, start in zip(texts, starts, strict=True):
            fixed = _locate(context, text, start)
            if fixed is None:
                dropped_answers += 1
                continue
            repaired += fixed != start
            kept_texts.append(text)
            kept_starts.append(fixed)
        if texts and not kept_texts:
            dropped_questions.append(where)
            continue
        examples.append(
            {
                "id": key,
                "question": question,
                "context": context,
                "answers": {"text": kept_texts, "answer_start": kept_starts},
                "where": where,
            }
        )
    if repaired:
        console.print(
            f"[yellow]warning:[/yellow] {role} data: {repaired} answer_start value(s) did not match the answer "
            "text and were moved to its nearest occurrence in the context"
        )
    if dropped_answers:
        console.print(
            f"[yellow]warning:[/yellow] {role} data: {dropped_answers} answer(s) do not occur in their context "
            f"and were dropped; {len(dropped_questions)} question(s) were left with none and skipped"
            + (f" (first: {dropped_questions[0]})" if dropped_questions else "")
        )
    if not examples:
        raise BertkitError(f"{source.describe()}: no usable questions in the {role} data")
    return examples


def _answers(record: dict, field: str, where: str) -> tuple[list[str], list[int]]:
    if field not in record:
        raise BertkitError(
            f"{where}: no '{field}' field (fields: {', '.join(k for k in record if k != 'where')}). Set "
            "qa.answers_field to the field holding the answers; a question without an answer has an empty list"
        )
    value = record[field]
    if value is None:
        return [], []
    if isinstance(value, dict) and "text" in value and "answer_start" in value:
        texts, starts = list(value["text"]), list(value["answer_start"])
    elif isinstance(value, list) and all(isinstance(a, dict) and "text" in a and "answer_start" in a for a in value):
        texts, starts = [a["text"] for a in value], [a["answer_start"] for a in value]
    else:
        raise BertkitError(
            f"{where}: '{field}' should be {{text: [...], answer_start: [...]}} or a list of "
            f"{{text, answer_start}}, found {value!r:.80}"
        )
    if len(texts) != len(starts):
        raise BertkitError(f"{where}: '{field}' has {len(texts)} texts but {len(starts)} answer_start values")
    try:
        return [str(t) for t in texts], [int(s) for s in starts]
    except (TypeError, ValueError):
        raise BertkitError(f"{where}: '{field}': answer_start values must be integers, found {starts}") from None


def _locate(context: str, text: str, start: int) -> int | None:
    """`start` when the answer is there; else the start of its nearest occurrence; None if absent."""
    if not text:
        return None
    if context[start : start + len(text)] == text:
        return start
    found, at = [], context.find(text)
    while at >= 0:
        found.append(at)
        at = context.find(text, at + 1)
    return min(found, key=lambda p: abs(p - start)) if found else None


def checked_record(record: dict, fields: dict, where: str, ids: dict, default_id: str | None = None):
    """(id, question, context) of a record, checked: both texts there and not empty, the id not
    seen before (`ids` maps the ids seen so far to where they were)."""
    for name in ("question", "context"):
        if fields[name] not in record:
            raise RecordError(
                f"{where}: no '{fields[name]}' field (fields: {', '.join(map(str, record)) or 'none'}). Every "
                f"question needs a '{fields['question']}' and a '{fields['context']}' field (qa.question_field / "
                "qa.context_field name them when training on data that calls them differently)",
                fields[name],
            )
    question = text_value(record[fields["question"]], where, fields["question"])
    context = text_value(record[fields["context"]], where, fields["context"])
    if not context.strip():
        raise RecordError(
            f"{where}: the context is empty; a question needs a passage to find its answer in", fields["context"]
        )
    if not question.strip():
        raise RecordError(f"{where}: the question is empty", fields["question"])
    key = record.get(fields["id"], default_id)
    if key is not None:
        key = str(key)
        if key in ids:
            raise RecordError(
                f"{where}: question id '{key}' is used twice (first at {ids[key]}); ids must be unique", fields["id"]
            )
        ids[key] = where
    return key, question, context


def complete_settings(info: dict) -> dict:
    """A bundle's settings, with the defaults filled in for a plain Hugging Face QA model
    (which answers every question, as SQuAD v1 models do)."""
    qa = QaConfig().model_dump()
    if "qa" in info:
        qa.update(info["qa"])
    else:  # windows in proportion to the model's length limit
        quarter = info["max_length"] // 4
        qa["doc_stride"] = min(derived_doc_stride(info["max_length"]), quarter)
        qa["max_question_length"] = min(qa["max_question_length"], quarter)
    if qa["doc_stride"] is None:
        qa["doc_stride"] = derived_doc_stride(info["max_length"])
    version_2 = bool(info.get("version_2", qa.get("version_2")))
    return {**info, "qa": {**qa, "version_2": version_2}, "version_2": version_2}

"""Extractive question answering: SQuAD v1.1 / v2.0 JSON, flat JSON lines, the hub's squad(_v2).

Question and context go in together. A context longer than the room the model leaves it is cut
into overlapping windows (`qa.doc_stride` tokens shared), so a context of any length is read
whole. Training points start and end at the answer's tokens, or at [CLS] when a window does not
hold the answer or the question has none. Prediction takes the `n_best` starts and ends of every
window, keeps the best valid pair, maps it back to the context's characters, and for SQuAD v2
answers nothing when the null score beats it by more than `qa.null_score_diff_threshold`.

Characters and tokens: a gold answer is the run of tokens that overlap it (white space at its
edges left out), so marks the tokenizer drops (an accent, a soft hyphen) never pull in a
neighbouring token; a predicted answer is widened to whole grapheme clusters, so it never ends
inside a character (the accent after the last letter of an NFD "José" is part of it).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

import numpy as np

from bertkit import data as data_mod
from bertkit import graphemes, metrics, models, tokenization
from bertkit.config import Config, DataSource, QaConfig, derived_doc_stride
from bertkit.data.readers import place_of, text_value
from bertkit.errors import BertkitError
from bertkit.inference import chunks, empty_record, forward, softmax
from bertkit.progress import console
from bertkit.tasks.base import Task

NO_CONTEXT = (-1, -1)  # offset_mapping entry of a token outside the context


class QaTask(Task):
    name = "qa"
    auto_model = "AutoModelForQuestionAnswering"

    # ------------------------------------------------------------ data

    def load(self, cfg: Config):
        def read(source: DataSource, role: str):
            import datasets

            return datasets.Dataset.from_list(read_examples(source, cfg, role))

        return data_mod.load_splits(cfg, read)

    def setup(self, ds, cfg: Config) -> dict:
        unanswerable = _unanswerable(ds["train"])
        version_2 = cfg.qa.version_2
        if version_2 is None:
            version_2 = bool(unanswerable)
        elif not version_2 and unanswerable:
            raise BertkitError(
                f"{len(unanswerable)} training question(s) have no answer (first: {unanswerable[0]}), but "
                "qa.version_2 is false (SQuAD v1: every question has an answer). Set qa.version_2: true "
                "to learn to abstain, or remove those questions."
            )
        for role in ("validation", "test"):
            if role in ds and not version_2:
                _warn_unanswerable(f"{role} data", _unanswerable(ds[role]))
        return {
            "task": self.name,
            "max_length": cfg.model.max_length,
            "version_2": version_2,
            "qa": {**cfg.qa.model_dump(), "version_2": version_2},
        }

    def prepare(self, ds, tokenizer, info: dict):
        import datasets

        prepared = {}
        for role, split in ds.items():
            answers = list(split["answers"])
            features = encode(tokenizer, list(split["question"]), list(split["context"]), info, answers)
            prepared[role] = datasets.Dataset.from_list(features)
        return datasets.DatasetDict(prepared)

    # ------------------------------------------------------------ model and training

    def build_model(self, source: str, info: dict, cfg: Config):
        from transformers import AutoModelForQuestionAnswering

        return models.load_weights(AutoModelForQuestionAnswering, source, cfg)

    def best_metric(self, info: dict) -> str:
        return "f1"

    def metric_names(self, info: dict) -> list[str]:
        v2 = [f"{part}_{m}" for part in ("has_ans", "no_ans", "best") for m in ("exact_match", "f1")]
        return ["exact_match", "f1", *(v2 if info["version_2"] else [])]

    def metric_fn(self, info: dict, features, examples):
        """Official SQuAD scores of a Trainer prediction on `features` (windows of `examples`)."""
        columns = _columns(features)
        records = examples.to_list()
        contexts = [r["context"] for r in records]

        def score(prediction):
            starts, ends = prediction.predictions[:2]
            rows = [np.stack([s, e], -1) for s, e in zip(starts, ends, strict=True)]
            return score_answers(extract_answers(columns, rows, contexts, info["qa"], info["version_2"]), records, info)

        return score

    # ------------------------------------------------------------ evaluate and predict

    def evaluate(self, model, tokenizer, info: dict, data: str, options: dict) -> dict:
        info = _complete(info)
        records = read_examples(DataSource(path=data, format=options.get("data_format")), _config_from(info), data)
        if not info["version_2"]:
            _warn_unanswerable(data, _unanswerable(records))
        questions, contexts = [r["question"] for r in records], [r["context"] for r in records]
        found = answer_questions(model, tokenizer, info, questions, contexts, options.get("batch_size", 32))
        return score_answers(found, records, info)

    def is_empty(self, record: dict, info: dict, options: dict) -> bool:
        """A record whose question and context are both there and both blank. One without either
        field is not empty: `predict` refuses it, naming the field (as it refuses a question
        without a context, or the reverse)."""
        from bertkit.prediction import blank

        fields = _fields(record, _complete(info)["qa"])
        return all(fields[k] in record and blank(record[fields[k]]) for k in ("question", "context"))

    def empty_result(self, model, record: dict, info: dict, options: dict) -> dict:
        id_field = _complete(info)["qa"]["id_field"]
        out = {"id": str(record[id_field])} if record.get(id_field) is not None else {}
        extra = {"alternatives": []} if options.get("n_best") else {}
        return {**out, **empty_record({}, None, answer=None, score=None, start=None, end=None, **extra)}

    def predict(self, model, tokenizer, info: dict, records: Iterable[dict], options: dict) -> Iterator[dict]:
        """{question, context (, id)} -> {id, answer, score, start, end} (+ alternatives on request)."""
        info = _complete(info)
        qa = info["qa"]
        alternatives = options.get("n_best") or 0
        seen: dict[str, str] = {}
        number = 0
        for chunk in chunks(records, options.get("chunk_size", 256)):
            checked = []
            for record in chunk:
                number += 1
                checked.append(_checked(record, _fields(record, qa), place_of(record, number), seen))
            ids, questions, contexts = (list(column) for column in zip(*checked, strict=True))
            batch = options.get("batch_size", 32)
            found = answer_questions(model, tokenizer, info, questions, contexts, batch, keep=alternatives)
            for key, answer in zip(ids, found, strict=True):
                out = {} if key is None else {"id": key}
                out.update({k: answer[k] for k in ("answer", "score", "start", "end")})
                if alternatives:
                    out["alternatives"] = answer["alternatives"]
                yield out

    def card_summary(self, info: dict) -> str:
        return "SQuAD v2: may answer nothing" if info.get("version_2") else "SQuAD v1: always answers"

    def cli_usage(self, where: str) -> str:
        return f"bertkit predict --model {where} --input questions.jsonl --output predictions.jsonl"

    def python_usage(self, where: str) -> list[str]:
        return [  # transformers 5 has no question-answering pipeline
            "from transformers import AutoModelForQuestionAnswering, AutoTokenizer",
            f'model = AutoModelForQuestionAnswering.from_pretrained("{where}")',
            f'tokenizer = AutoTokenizer.from_pretrained("{where}")',
        ]


TASK = QaTask()


def _fields(record: dict, qa: dict) -> dict[str, str]:
    """The names of a prediction record's question, context and id fields: the bundle's
    (`qa.question_field`, ...), or the plain names, which records built by `--question` use.
    A field that is in neither form is named as the bundle names it, for the error message."""
    names = {}
    for key in ("question", "context", "id"):
        own = qa[f"{key}_field"]
        names[key] = key if own not in record and key in record else own
    return names


def answer_questions(model, tokenizer, info: dict, questions, contexts, batch_size: int, keep: int = 0) -> list:
    """The model's answer to each question about its context, through windows of the context."""
    features = encode(tokenizer, questions, contexts, info)
    rows = forward(model, tokenizer, features, batch_size, output=_start_end)
    return extract_answers(_columns(features), rows, contexts, info["qa"], info["version_2"], keep=keep)


def score_answers(found: list[dict], records: list[dict], info: dict) -> dict:
    """The squad metric on answers (from `extract_answers`) to the questions of `records`."""
    predictions = [
        {
            "id": record["id"],
            "prediction_text": answer["answer"],
            "no_answer_probability": answer["null_difference"],
            "best_answer": answer["best_answer"],
        }
        for record, answer in zip(records, found, strict=True)
    ]
    references = [{"id": r["id"], "answers": r["answers"]} for r in records]
    unit = _f1_unit(info["qa"].get("f1_unit", "auto"), [r["context"] for r in records])
    result = metrics.load("squad").compute(predictions=predictions, references=references, unit=unit)
    if info["version_2"]:
        result["null_score_diff_threshold"] = info["qa"]["null_score_diff_threshold"]
    return result


def _f1_unit(unit: str, contexts: list[str]) -> str:
    """'char' for text written without spaces between words (Japanese, Chinese), as JSQuAD is
    scored; 'word' otherwise, as SQuAD is."""
    if unit != "auto":
        return unit
    sample = "".join(contexts[:200])
    cjk = sum(1 for ch in sample if "\u3040" <= ch <= "\u30ff" or "\u4e00" <= ch <= "\u9fff")
    return "char" if sample and cjk / len(sample) > 0.3 else "word"


def _columns(features) -> dict:
    """What answer extraction reads from the windows (a Dataset or a list of feature dicts)."""
    names = ("example", "offset_mapping", "cls_index")
    if isinstance(features, list):
        return {k: [f[k] for f in features] for k in names}
    return {k: list(features[k]) for k in names}


def _start_end(out, inputs, rows):
    import torch

    return torch.stack([out.start_logits, out.end_logits], -1)


def _complete(info: dict) -> dict:
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


def _config_from(info: dict) -> Config:
    from bertkit.config import load_config

    cfg = load_config(None, task="qa")
    cfg.qa = QaConfig.model_validate(info.get("qa") or {})
    return cfg


def _warn_unanswerable(where: str, missing: list[str]) -> None:
    if missing:
        console.print(
            f"[yellow]warning:[/yellow] {where}: {len(missing)} question(s) have no answer (first: {missing[0]}), "
            "but the model answers every question (SQuAD v1); they count as misses (see no_ans_* in the "
            "metrics). Train with qa.version_2: true to learn to abstain."
        )


def _unanswerable(examples) -> list[str]:
    rows = examples if isinstance(examples, list) else examples.to_list()
    return [r.get("where") or r["id"] for r in rows if not r["answers"]["text"]]


# ---------------------------------------------------------------- reading


def read_examples(source: DataSource, cfg: Config, role: str) -> list[dict]:
    """Question records `{id, question, context, answers: {text, answer_start}, where}`, checked:
    answer starts repaired where the answer text is elsewhere in the context, answers that are
    nowhere in it dropped (with a warning), ids unique, no empty context."""
    qa = cfg.qa
    if source.hub:
        ds = data_mod.load_source(source, cfg)
        raw = ((f"{source.describe()}, row {n}", r) for n, r in enumerate(ds, start=1))
    else:
        from bertkit.data.readers import detect_format, read_records

        fmt = detect_format(source.path, source.format)
        raw = (
            (r.pop("where", None) or f"{source.path}, record {n}", r)
            for n, r in enumerate(read_records(source.path, fmt), start=1)
        )
    examples, ids = [], {}
    repaired = dropped_answers = 0
    dropped_questions = []
    fields = {"question": qa.question_field, "context": qa.context_field, "id": qa.id_field}
    for where, record in raw:
        key, question, context = _checked(record, fields, where, ids, default_id=str(len(examples) + 1))
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


def _checked(record: dict, fields: dict, where: str, ids: dict, default_id: str | None = None):
    """(id, question, context) of a record, checked: both texts there and not empty, the id not
    seen before (`ids` maps the ids seen so far to where they were)."""
    for name in ("question", "context"):
        if fields[name] not in record:
            raise BertkitError(
                f"{where}: no '{fields[name]}' field (fields: {', '.join(record) or 'none'}). Every question "
                f"needs a '{fields['question']}' and a '{fields['context']}' field (qa.question_field / "
                "qa.context_field name them when training on data that calls them differently)"
            )
    question = text_value(record[fields["question"]], where, fields["question"])
    context = text_value(record[fields["context"]], where, fields["context"])
    if not context.strip():
        raise BertkitError(f"{where}: the context is empty; a question needs a passage to find its answer in")
    if not question.strip():
        raise BertkitError(f"{where}: the question is empty")
    key = record.get(fields["id"], default_id)
    if key is not None:
        key = str(key)
        if key in ids:
            raise BertkitError(f"{where}: question id '{key}' is used twice (first at {ids[key]}); ids must be unique")
        ids[key] = where
    return key, question, context


# ---------------------------------------------------------------- windows


def encode(tokenizer, questions: list[str], contexts: list[str], info: dict, answers: list[dict] | None = None):
    """Features for (question, context) pairs: one per window of each context, with the context
    offsets of every token, and start/end positions when `answers` are given. Offsets come from
    the tokenizer when it is fast and from `bertkit.japanese` when it is a Japanese one, so both
    are windowed here the same way."""
    qa, max_length = info["qa"], info["max_length"]
    tokenization.check_offsets(tokenizer, "qa")
    if not questions:
        return []
    asked = [ids[: qa["max_question_length"]] for ids, _ in tokenization.tokens_with_offsets(tokenizer, questions)]
    longest = max(len(ids) for ids in asked)
    specials = tokenizer.num_special_tokens_to_add(pair=True)
    room = max_length - longest - specials
    if qa["doc_stride"] >= room:
        raise BertkitError(
            f"qa.doc_stride ({qa['doc_stride']}) must be below the context room of a window: model.max_length "
            f"({max_length}) - the longest question ({longest} tokens; qa.max_question_length cuts them) - "
            f"special tokens = {room}. Lower doc_stride or max_question_length, or raise max_length."
        )
    cls_id = tokenizer.cls_token_id
    features = []
    missed = 0
    read = tokenization.tokens_with_offsets(tokenizer, contexts)
    for example, (question, (ids, offsets)) in enumerate(zip(asked, read, strict=True)):
        budget = max_length - len(question) - specials
        held = None
        if answers is not None and answers[example]["text"]:
            found = answers[example]
            held = answer_tokens(offsets, contexts[example], found["answer_start"][0], found["text"][0])
            missed += held is None
        for start, end in tokenization.window_spans(len(ids), budget, qa["doc_stride"]):
            feature, at = tokenization.wrap_pair(tokenizer, question, ids[start:end])
            window = [NO_CONTEXT] * len(feature["input_ids"])
            window[at : at + end - start] = offsets[start:end]
            feature["example"] = example
            feature["offset_mapping"] = window
            feature["cls_index"] = feature["input_ids"].index(cls_id) if cls_id in feature["input_ids"] else 0
            if answers is not None:
                # the answer's tokens when this window holds all of them; else [CLS]
                inside = held is not None and start <= held[0] and held[1] < end
                first, last = (at + held[0] - start, at + held[1] - start) if inside else (feature["cls_index"],) * 2
                feature["start_positions"], feature["end_positions"] = first, last
            features.append(feature)
    if missed:
        console.print(
            f"[yellow]warning:[/yellow] {missed} answer(s) lie wholly on characters the tokenizer drops (a soft "
            "hyphen, a zero-width space, a lone accent), so no token can point at them; those questions are "
            "trained as having no answer"
        )
    return features


def answer_tokens(offsets: list[tuple[int, int]], context: str, start: int, text: str) -> tuple[int, int] | None:
    """The first and last token (indices into `offsets`, one (start, end) per context token) of
    the answer `text` at character `start` of `context`: the tokens that overlap it, once the
    white space at its edges is left out. Overlap, not containment, so that characters no token
    covers (an accent the tokenizer strips, a soft hyphen) neither lose the answer nor pull in a
    neighbouring token. None when no token overlaps it."""
    end = start + len(text)
    while start < end and context[start].isspace():
        start += 1
    while end > start and context[end - 1].isspace():
        end -= 1
    overlapping = [t for t, (a, b) in enumerate(offsets) if a < b and a < end and b > start]
    if start == end or not overlapping:
        return None
    return overlapping[0], overlapping[-1]


# ---------------------------------------------------------------- answers from logits


def extract_answers(features: dict, rows: list, contexts: list[str], qa: dict, version_2: bool, keep: int = 0):
    """One answer per context: the best start/end pair over all its windows.

    Each result has `answer`, `start`, `end` (characters in the context), `score` (probability
    among the candidates and, for v2, the null answer), `best_answer` (the best non-empty
    answer), `null_difference` (null score minus the best answer's score) and, when `keep` > 0,
    the `keep` best `alternatives`.
    """
    n_best, longest = qa["n_best"], qa["max_answer_length"]
    per_example: dict[int, list] = {}
    for example, offsets, cls, row in zip(
        features["example"], features["offset_mapping"], features["cls_index"], rows, strict=True
    ):
        per_example.setdefault(example, []).append((np.asarray(offsets), cls, np.asarray(row)))
    results = []
    for example, context in enumerate(contexts):
        clusters = graphemes.Graphemes(context)
        candidates: dict[tuple[int, int], float] = {}
        null = np.inf
        for offsets, cls, row in per_example.get(example, []):
            start_logits, end_logits = row[: len(offsets), 0], row[: len(offsets), 1]
            null = min(null, float(start_logits[cls] + end_logits[cls]))
            inside = np.flatnonzero(offsets[:, 0] >= 0)
            if not len(inside):
                continue
            starts = inside[np.argsort(-start_logits[inside])[:n_best]]
            ends = inside[np.argsort(-end_logits[inside])[:n_best]]
            length = ends[None, :] - starts[:, None]
            scores = start_logits[starts][:, None] + end_logits[ends][None, :]
            valid = (length >= 0) & (length < longest)
            for i, j in zip(*np.nonzero(valid), strict=True):
                # whole characters: an answer ends after the marks of its last character
                span = clusters.snap(int(offsets[starts[i], 0]), int(offsets[ends[j], 1]))
                if span[0] < span[1]:  # not white space alone
                    candidates[span] = max(candidates.get(span, -np.inf), float(scores[i, j]))
        ranked = sorted(candidates.items(), key=lambda item: -item[1])[: max(n_best, keep)]
        results.append(_choose(ranked, null, context, qa, version_2, keep))
    return results


def _choose(ranked: list, null: float, context: str, qa: dict, version_2: bool, keep: int) -> dict:
    scores = np.array([s for _, s in ranked] + ([null] if version_2 and np.isfinite(null) else []))
    probs = softmax(scores) if len(scores) else scores
    best_span, best_score = ranked[0] if ranked else ((None, None), -np.inf)
    difference = null - best_score if ranked and np.isfinite(null) else 1e9
    abstain = not ranked or (version_2 and difference > qa["null_score_diff_threshold"])
    result = {
        "answer": "" if abstain else context[best_span[0] : best_span[1]],
        "score": round(float(probs[-1] if abstain and version_2 and len(probs) else probs[0] if ranked else 0.0), 6),
        "start": None if abstain else best_span[0],
        "end": None if abstain else best_span[1],
        "best_answer": context[best_span[0] : best_span[1]] if ranked else "",
        "null_difference": float(difference),
    }
    if keep:
        result["alternatives"] = [
            {"answer": context[s:e], "score": round(float(p), 6), "start": s, "end": e}
            for ((s, e), _), p in zip(ranked[:keep], probs, strict=False)
        ]
    return result

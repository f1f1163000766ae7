"""Question/context windows as model features, and answers back from the model: the best span of
each question over all its windows, with the no-answer score for SQuAD v2.0.
"""

from __future__ import annotations

import numpy as np

from bertkit.core import graphemes, metrics, tokenization
from bertkit.core.errors import BertkitError
from bertkit.core.inference import forward
from bertkit.core.progress import console

NO_CONTEXT = (-1, -1)  # offset_mapping entry of a token outside the context


def answer_questions(model, tokenizer, info: dict, questions, contexts, batch_size: int, keep: int = 0) -> list:
    """The model's answer to each question about its context, through windows of the context."""
    features = encode(tokenizer, questions, contexts, info)
    rows = forward(model, tokenizer, features, batch_size, output=_start_end)
    return extract_answers(feature_columns(features), rows, contexts, info["qa"], info["version_2"], keep=keep)


def score_answers(found: list[dict], records: list[dict], info: dict, unit: str | None = None) -> dict:
    """The squad metric on answers (from `extract_answers`) to the questions of `records`
    (`unit`: word or char F1; None: as `qa.f1_unit` says, from these contexts when auto)."""
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
    unit = unit or _f1_unit(info["qa"].get("f1_unit", "auto"), [r["context"] for r in records])
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


def feature_columns(features) -> dict:
    """What answer extraction reads from the windows (a Dataset or a list of feature dicts)."""
    names = ("example", "offset_mapping", "cls_index")
    if isinstance(features, list):
        return {k: [f[k] for f in features] for k in names}
    return {k: list(features[k]) for k in names}


def _start_end(out, inputs, rows):
    if isinstance(out.start_logits, np.ndarray):  # an ONNX model's
        return np.stack([out.start_logits, out.end_logits], -1)
    import torch

    # stays on the model's device: `forward` copies it to the host with the other batches' outputs
    return torch.stack([out.start_logits, out.end_logits], -1)


def encode(tokenizer, questions: list[str], contexts: list[str], info: dict, answers: list[dict] | None = None):
    """Features for (question, context) pairs: one per window of each context, with the context
    offsets of every token, and start/end positions when `answers` are given. Offsets come from
    the tokenizer when it is fast and from `bertkit.core.japanese` when it is a Japanese one, so both
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
        ranked = sorted(candidates.items(), key=lambda item: -item[1])
        results.append(_choose(ranked, null, context, qa, version_2, keep))
    return results


def _choose(ranked: list, null: float, context: str, qa: dict, version_2: bool, keep: int) -> dict:
    """The answer among `ranked` (every candidate span, best first) and, with `keep`, up to `keep`
    alternatives: the best other answers, each text once (at its best place) and never the answer
    itself. Scores are probabilities among the `qa.n_best` best candidates and, for v2, the null
    answer, whatever `keep` is: an answer's score does not depend on how many alternatives are
    asked for, and an alternative's is on the same scale."""
    top = [s for _, s in ranked[: qa["n_best"]]] + ([null] if version_2 and np.isfinite(null) else [])
    scale = float(np.logaddexp.reduce(top)) if top else 0.0
    best_span, best_score = ranked[0] if ranked else ((None, None), -np.inf)
    difference = null - best_score if ranked and np.isfinite(null) else 1e9
    abstain = not ranked or (version_2 and difference > qa["null_score_diff_threshold"])
    chosen = null if abstain and version_2 and np.isfinite(null) else best_score
    result = {
        "answer": "" if abstain else context[best_span[0] : best_span[1]],
        "score": round(float(np.exp(chosen - scale)), 6) if top else 0.0,
        "start": None if abstain else best_span[0],
        "end": None if abstain else best_span[1],
        "best_answer": context[best_span[0] : best_span[1]] if ranked else "",
        "null_difference": float(difference),
    }
    if keep:
        said = {result["answer"]}
        alternatives = []
        for (s, e), score in ranked:
            if len(alternatives) == keep:
                break
            if context[s:e] not in said:
                said.add(context[s:e])
                alternatives.append(
                    {"answer": context[s:e], "score": round(float(np.exp(score - scale)), 6), "start": s, "end": e}
                )
        result["alternatives"] = alternatives
    return result

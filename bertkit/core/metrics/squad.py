"""SQuAD exact match and F1, as the official v1.1 / v2.0 evaluation scripts define them, written
for bertkit as an `evaluate` module and loaded by path.

Answers are compared after the official normalisation: lower case, punctuation removed, the
articles a / an / the removed, whitespace collapsed. Each prediction is scored against every gold
answer and keeps its best score. A question without gold answers (SQuAD v2) expects the empty
answer: 1 for an empty prediction, 0 for anything else.

For SQuAD v2, when each prediction carries `no_answer_probability` (bertkit passes the null score
minus the best answer's score) and `best_answer` (the best non-empty answer, whether or not it
was chosen), the threshold on that difference that would have scored best is searched as the
official v2 script does, and reported as `best_f1` / `best_f1_threshold` (and the same for exact
match).
"""

import collections
import re
import string
import unicodedata

import datasets

from bertkit.core.metrics import base

_DESCRIPTION = "Official SQuAD v1.1 / v2.0 exact match and F1 (0-100), HasAns / NoAns splits, best null threshold."
_INPUTS = """predictions: a list of {id, prediction_text, no_answer_probability, best_answer}
(the last two feed v2's threshold search).
references: a list of {id, answers: {text: [...], answer_start: [...]}}; no answers = unanswerable."""

_PUNCTUATION = set(string.punctuation)
_ARTICLES = re.compile(r"\b(a|an|the)\b", re.UNICODE)


def normalize_answer(text: str) -> str:
    text = "".join(ch for ch in text.lower() if ch not in _PUNCTUATION)
    return " ".join(_ARTICLES.sub(" ", text).split())


def normalize_chars(text: str) -> str:
    """Character-level normalisation (JSQuAD): the official one, then no spaces and no Unicode
    punctuation (、。「」 ...)."""
    return "".join(
        ch for ch in normalize_answer(text) if not ch.isspace() and not unicodedata.category(ch).startswith("P")
    )


def exact_words(gold: str, predicted: str) -> int:
    return int(normalize_answer(gold) == normalize_answer(predicted))


def exact_chars(gold: str, predicted: str) -> int:
    return int(normalize_chars(gold) == normalize_chars(predicted))


def f1_words(gold: str, predicted: str) -> float:
    return _overlap(normalize_answer(gold).split(), normalize_answer(predicted).split())


def f1_chars(gold: str, predicted: str) -> float:
    return _overlap(list(normalize_chars(gold)), list(normalize_chars(predicted)))


def _overlap(gold_tokens: list[str], predicted_tokens: list[str]) -> float:
    if not gold_tokens or not predicted_tokens:
        return float(gold_tokens == predicted_tokens)
    shared = sum((collections.Counter(gold_tokens) & collections.Counter(predicted_tokens)).values())
    if shared == 0:
        return 0.0
    precision, recall = shared / len(predicted_tokens), shared / len(gold_tokens)
    return 2 * precision * recall / (precision + recall)


def _best_threshold(scores: dict, null_scores: dict, answerable: dict) -> tuple[float, float]:
    """The score reached, and the threshold used, if every question whose null score beats its
    best answer by more than the threshold got the empty answer, and every other one its best
    answer (`scores`: the score of that answer). The search of the official v2 script."""
    # start from "all empty": right exactly on the unanswerable questions
    current = best = sum(not has for has in answerable.values())
    threshold = min(null_scores.values()) - 1.0
    for qid in sorted(null_scores, key=null_scores.get):
        current += scores[qid] if answerable[qid] else -1
        if current > best:
            best, threshold = current, null_scores[qid]
    return 100.0 * best / len(scores), threshold


_FEATURES = datasets.Features(
    {
        "predictions": {
            "id": datasets.Value("string"),
            "prediction_text": datasets.Value("string"),
            "no_answer_probability": datasets.Value("float32"),
            "best_answer": datasets.Value("string"),
        },
        "references": {
            "id": datasets.Value("string"),
            "answers": datasets.Sequence({"text": datasets.Value("string"), "answer_start": datasets.Value("int32")}),
        },
    }
)


class Squad(base.Metric):
    description = _DESCRIPTION
    inputs = _INPUTS
    citation = "Rajpurkar et al., SQuAD (2016) and Know What You Don't Know (2018)"
    features = _FEATURES

    def _compute(self, predictions, references, unit: str = "word"):
        """`unit`: 'word' (SQuAD's F1 over words) or 'char' (F1 over characters, as JSQuAD is scored)."""
        exact, f1 = (exact_chars, f1_chars) if unit == "char" else (exact_words, f1_words)
        golds = {r["id"]: [t for t in r["answers"]["text"] if normalize_answer(t)] for r in references}
        predicted = {p["id"]: p["prediction_text"] for p in predictions}
        missing = [qid for qid in golds if qid not in predicted]
        if missing:
            raise ValueError(f"{len(missing)} question(s) have no prediction, e.g. {missing[0]}")
        em, f = _scores(exact, golds, predicted), _scores(f1, golds, predicted)
        answerable = {qid: bool(a) for qid, a in golds.items()}
        result = {"exact_match": _mean(em, golds), "f1": _mean(f, golds), "total": len(golds)}
        if not all(answerable.values()):
            has = [q for q in golds if answerable[q]]
            no = [q for q in golds if not answerable[q]]
            result.update(
                {
                    "has_ans_exact_match": _mean(em, has),
                    "has_ans_f1": _mean(f, has),
                    "has_ans_total": len(has),
                    "no_ans_exact_match": _mean(em, no),
                    "no_ans_f1": _mean(f, no),
                    "no_ans_total": len(no),
                }
            )
            nulls = {p["id"]: p["no_answer_probability"] for p in predictions if p["id"] in golds}
            best = {p["id"]: p["best_answer"] for p in predictions}
            best_em, em_threshold = _best_threshold(_scores(exact, golds, best), nulls, answerable)
            best_f1, f1_threshold = _best_threshold(_scores(f1, golds, best), nulls, answerable)
            result.update(
                {
                    "best_exact_match": best_em,
                    "best_exact_match_threshold": em_threshold,
                    "best_f1": best_f1,
                    "best_f1_threshold": f1_threshold,
                }
            )
        return result


def _scores(measure, golds: dict, predicted: dict) -> dict:
    """Per question, the best `measure` of its prediction against any gold answer ("" if none)."""
    return {qid: max(measure(a, predicted[qid]) for a in answers or [""]) for qid, answers in golds.items()}


def _mean(values: dict, keys) -> float:
    keys = list(keys)
    return 100.0 * sum(values[k] for k in keys) / len(keys) if keys else 0.0

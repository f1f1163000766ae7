"""QA pieces on their own: the SQuAD metric, reading and checking data, windows, answer extraction."""

import json

import numpy as np
import pytest

from bertkit.config import DataSource, load_config
from bertkit.core import metrics
from bertkit.core.errors import BertkitError
from bertkit.tasks.qa.answers import encode, extract_answers
from bertkit.tasks.qa.reading import read_examples
from bertkit.tasks.qa.task import TASK


def _squad(path, paragraphs):
    path.write_text(json.dumps({"version": "1.1", "data": [{"title": "t", "paragraphs": paragraphs}]}))
    return str(path)


def _read(path, **sets):
    cfg = load_config(None, [f"qa.{k}={v}" for k, v in sets.items()], task="qa")
    return read_examples(DataSource(path=str(path)), cfg.qa, "train")


# ---------------------------------------------------------------- metric


def test_squad_metric_official_normalisation():
    result = metrics.load("squad").compute(
        predictions=[
            {"id": "1", "prediction_text": "The Eiffel tower!", "no_answer_probability": 0.0, "best_answer": ""},
            {"id": "2", "prediction_text": "in 1889", "no_answer_probability": 0.0, "best_answer": ""},
        ],
        references=[
            {"id": "1", "answers": {"text": ["Eiffel Tower", "tower"], "answer_start": [0, 7]}},
            {"id": "2", "answers": {"text": ["1889"], "answer_start": [3]}},
        ],
    )
    # articles and punctuation go, case folds: exact on 1; on 2, F1 = 2 * (1/2 * 1) / (1/2 + 1)
    assert result["exact_match"] == pytest.approx(50.0)
    assert result["f1"] == pytest.approx(100 * (1 + 2 / 3) / 2)
    assert "has_ans_f1" not in result


def test_squad_metric_v2_splits_and_best_threshold():
    predictions = [
        # answerable, answered right, null clearly loses
        {"id": "a", "prediction_text": "cat", "no_answer_probability": -3.0, "best_answer": "cat"},
        # answerable, but the threshold made it abstain; its best answer was right
        {"id": "b", "prediction_text": "", "no_answer_probability": 0.5, "best_answer": "dog"},
        # unanswerable, abstained
        {"id": "c", "prediction_text": "", "no_answer_probability": 2.0, "best_answer": "fish"},
    ]
    references = [
        {"id": "a", "answers": {"text": ["cat"], "answer_start": [0]}},
        {"id": "b", "answers": {"text": ["dog"], "answer_start": [0]}},
        {"id": "c", "answers": {"text": [], "answer_start": []}},
    ]
    result = metrics.load("squad").compute(predictions=predictions, references=references)
    assert result["has_ans_exact_match"] == pytest.approx(50.0) and result["has_ans_total"] == 2
    assert result["no_ans_exact_match"] == pytest.approx(100.0) and result["no_ans_total"] == 1
    assert result["exact_match"] == pytest.approx(200 / 3)
    # answering when the null difference is <= 0.5 (not 2.0) gets all three right
    assert result["best_exact_match"] == pytest.approx(100.0)
    assert 0.5 <= result["best_exact_match_threshold"] < 2.0


def test_squad_metric_needs_every_question():
    with pytest.raises(ValueError, match="have no prediction"):
        metrics.load("squad").compute(
            predictions=[
                {"id": i, "prediction_text": "x", "no_answer_probability": 0.0, "best_answer": "x"} for i in "13"
            ],
            references=[
                {"id": "1", "answers": {"text": ["x"], "answer_start": [0]}},
                {"id": "2", "answers": {"text": ["y"], "answer_start": [0]}},
            ],
        )


# ---------------------------------------------------------------- reading


def test_malformed_squad_file_names_the_missing_key(tmp_path):
    path = _squad(
        tmp_path / "bad.json",
        [{"context": "abc", "qas": [{"id": "1", "question": "q?", "answers": []}, {"id": "2", "answers": []}]}],
    )
    with pytest.raises(BertkitError, match=r"data\[0\]\.paragraphs\[0\]\.qas\[1\] has no 'question'"):
        _read(path)


def test_answer_start_repaired_or_dropped(tmp_path, capsys):
    context = "the cat sat near the cat flap"
    path = _squad(
        tmp_path / "d.json",
        [
            {
                "context": context,
                "qas": [
                    # 'cat flap' is at 21; the given 3 is wrong -> moved to the only occurrence
                    {"id": "1", "question": "what?", "answers": [{"text": "cat flap", "answer_start": 3}]},
                    # 'cat' occurs at 4 and 21; 19 is nearest to 21
                    {"id": "2", "question": "who?", "answers": [{"text": "cat", "answer_start": 19}]},
                    # not in the context at all: the question is skipped
                    {"id": "3", "question": "where?", "answers": [{"text": "dog", "answer_start": 0}]},
                ],
            }
        ],
    )
    records = _read(path)
    assert [r["id"] for r in records] == ["1", "2"]
    assert records[0]["answers"]["answer_start"] == [21]
    assert records[1]["answers"]["answer_start"] == [21]
    err = " ".join(capsys.readouterr().err.split())
    assert "2 answer_start value(s)" in err and "1 answer(s) do not occur" in err and "qas[2]" in err


def test_duplicate_ids_and_empty_context(tmp_path):
    qa = {"question": "q?", "answers": [{"text": "a", "answer_start": 0}]}
    dup = _squad(tmp_path / "dup.json", [{"context": "a b", "qas": [{"id": "x", **qa}, {"id": "x", **qa}]}])
    with pytest.raises(BertkitError, match="question id 'x' is used twice"):
        _read(dup)
    empty = _squad(tmp_path / "empty.json", [{"context": "  ", "qas": [{"id": "x", **qa}]}])
    with pytest.raises(BertkitError, match=r"qas\[0\]: the context is empty"):
        _read(empty)


def test_flat_json_lines_with_configured_fields(tmp_path):
    path = tmp_path / "flat.jsonl"
    rows = [
        {"qid": 7, "q": "who?", "passage": "alice met bob", "ans": [{"text": "bob", "answer_start": 10}]},
        {"qid": 8, "q": "when?", "passage": "at noon", "ans": {"text": ["noon"], "answer_start": [3]}},
    ]
    path.write_text("\n".join(json.dumps(r) for r in rows))
    records = _read(path, question_field="q", context_field="passage", id_field="qid", answers_field="ans")
    assert [(r["id"], r["answers"]["text"]) for r in records] == [("7", ["bob"]), ("8", ["noon"])]


def test_version_2_detected_or_refused(tmp_path):
    import datasets

    rows = [
        {"id": "1", "question": "q", "context": "c a", "answers": {"text": ["a"], "answer_start": [2]}, "where": "x"},
        {"id": "2", "question": "q", "context": "c a", "answers": {"text": [], "answer_start": []}, "where": "y"},
    ]
    ds = {"train": datasets.Dataset.from_list(rows)}
    assert TASK.training.setup(ds, load_config(None, task="qa"))["version_2"] is True
    with pytest.raises(BertkitError, match=r"1 training question\(s\) have no answer \(first: y\).*version_2"):
        TASK.training.setup(ds, load_config(None, ["qa.version_2=false"], task="qa"))


# ---------------------------------------------------------------- windows and answers


def _info(max_length=32, stride=8, **qa):
    cfg = load_config(None, [f"model.max_length={max_length}", f"qa.doc_stride={stride}"], task="qa")
    return {"max_length": max_length, "version_2": False, "qa": {**cfg.qa.model_dump(), **qa}}


def test_long_context_windows_cover_it_and_locate_the_answer(tiny_model):
    from bertkit.core.tokenization import load_tokenizer

    tok = load_tokenizer(str(tiny_model))
    words = [f"w{i % 7}" for i in range(150)]
    words[120] = "paris"
    context = " ".join(words)
    start = context.index("paris")
    answers = [{"text": ["paris"], "answer_start": [start]}]
    features = encode(tok, ["which place ?"], [context], _info(), answers)
    assert len(features) > 3
    covered = {o for f in features for o in f["offset_mapping"] if o[0] >= 0}
    assert min(o[0] for o in covered) == 0 and max(o[1] for o in covered) == len(context)
    holding = [f for f in features if f["start_positions"] != f["cls_index"]]
    assert holding, "some window must hold the answer"
    for f in holding:
        first, last = f["offset_mapping"][f["start_positions"]], f["offset_mapping"][f["end_positions"]]
        assert context[first[0] : last[1]] == "paris"
    assert all(f["start_positions"] == f["end_positions"] == 0 for f in features if f not in holding)


def test_stride_too_large_is_explained(tiny_model):
    from bertkit.core.tokenization import load_tokenizer

    tok = load_tokenizer(str(tiny_model))
    with pytest.raises(BertkitError, match=r"qa.doc_stride \(40\) must be below .* longest question \(32 tokens"):
        encode(tok, ["q " * 50], ["c"], _info(max_length=64, stride=40, max_question_length=32))


def test_extract_answers_best_valid_span_and_null():
    # one window: [CLS] q [SEP] c0 c1 c2 [SEP]; context tokens at 3..5
    offsets = [(-1, -1), (-1, -1), (-1, -1), (0, 3), (4, 7), (8, 11), (-1, -1)]
    context = "abc def ghi"
    start = np.array([1.0, 0, 0, 0.5, 3.0, 0.2, 0])
    end = np.array([1.0, 0, 0, 4.0, 0.1, 2.0, 0])  # best end (3) lies before the best start (4)
    features = {"example": [0], "offset_mapping": [offsets], "cls_index": [0]}
    rows = [np.stack([start, end], -1)]
    qa = {"n_best": 20, "max_answer_length": 30, "null_score_diff_threshold": 0.0}
    (v1,) = extract_answers(features, rows, [context], qa, version_2=False, keep=2)
    assert (v1["answer"], v1["start"], v1["end"]) == ("def ghi", 4, 11)  # 3.0 + 2.0
    # the alternatives are the other answers, best first: never the answer itself
    assert [a["answer"] for a in v1["alternatives"]] == ["abc", "def"]  # 4.5, 3.1
    assert v1["alternatives"][0]["score"] < v1["score"]
    assert v1["null_difference"] == pytest.approx(2.0 - 5.0)
    (short,) = extract_answers(features, rows, [context], {**qa, "max_answer_length": 1}, version_2=False)
    assert short["answer"] == "abc"  # 0.5 + 4.0 beats one-token spans starting later
    (v2,) = extract_answers(features, rows, [context], {**qa, "null_score_diff_threshold": -4.0}, version_2=True)
    assert v2["answer"] == "" and v2["start"] is None and v2["best_answer"] == "def ghi"


def test_alternatives_are_the_other_answers_each_once():
    # "paris" twice in the context: as the answer it is not an alternative, at either place
    context = "paris or paris lyon"
    offsets = [(-1, -1), (0, 5), (6, 8), (9, 14), (15, 19), (-1, -1)]
    start = np.array([0, 4.0, 0, 3.5, 2.0, 0])
    end = np.array([0, 4.0, 0, 3.5, 1.0, 0])
    features = {"example": [0], "offset_mapping": [offsets], "cls_index": [0]}
    rows = [np.stack([start, end], -1)]
    qa = {"n_best": 20, "max_answer_length": 1, "null_score_diff_threshold": 0.0}
    plain = extract_answers(features, rows, [context], qa, version_2=False)[0]
    for keep in (1, 2, 5):
        (found,) = extract_answers(features, rows, [context], qa, version_2=False, keep=keep)
        texts = [a["answer"] for a in found["alternatives"]]
        assert found["answer"] == "paris" and "paris" not in texts and len(texts) == len(set(texts))
        assert texts == ["lyon", "or"][:keep]  # as many as asked, while there are other answers
        assert found["score"] == plain["score"]  # the answer's score does not depend on --n-best
    # v2 abstaining: the answer is "no answer", so the best span is the first alternative
    (v2,) = extract_answers(features, rows, [context], {**qa, "null_score_diff_threshold": -9.0}, True, keep=2)
    assert v2["answer"] == "" and [a["answer"] for a in v2["alternatives"]] == ["paris", "lyon"]


def test_n_best_is_the_same_other_answers_in_every_output_format(head_models, tmp_path, cli):
    import csv

    context = tmp_path / "context.txt"
    context.write_text("Marie Curie won the Nobel Prize in Paris in 1903 and again in 1911 in Paris.")
    listed = {}
    for fmt in ("jsonl", "csv", "tsv"):
        out = tmp_path / f"answers.{fmt}"
        ask = ("--question", "Where did she win?", "--context-file", context, "--n-best", "3", "-o", out)
        code, _, err = cli("predict", "-m", head_models["qa"], *ask)
        assert code == 0, err
        if fmt == "jsonl":
            record = json.loads(out.read_text())
        else:
            (record,) = csv.DictReader(out.open(newline=""), delimiter="," if fmt == "csv" else "\t")
            record["alternatives"] = json.loads(record["alternatives"])
        texts = [a["answer"] for a in record["alternatives"]]
        assert len(texts) == 3 and record["answer"] not in texts and len(set(texts)) == 3, record
        listed[fmt] = record["alternatives"]
    assert listed["csv"] == listed["jsonl"] == listed["tsv"]

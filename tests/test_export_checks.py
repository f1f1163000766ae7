"""bertkit/exporting/checks.py: the checks `bertkit export` runs on what it wrote (fp32 against
PyTorch, int8 against fp32), each test of an edge that failed before its fix (issue 18)."""

import json

import pytest

pytest.importorskip("onnxruntime")
pytest.importorskip("onnx")


# ---------------------------------------------------------------- the int8 check, on fake models


def _FakeTask(name, metric, scores, predict):
    """A task whose fp32 and int8 "models" (the strings) give the predictions and scores a test
    sets, with the named task's own export part, for the export's int8 check."""
    from types import SimpleNamespace

    from bertkit.tasks import get_task
    from bertkit.tasks.contract import Prediction

    class Given(Prediction):  # the contract's checks of records, these predictions
        def is_empty(self, record, info, options):
            return False

        def predict(self, model, tokenizer, info, records, options):
            return (predict(model, r) for r in records)

        def empty_result(self, model, record, info, options):
            raise AssertionError("no record is empty here")

        def check_record(self, *args, **kwargs):  # what is checked here is the comparison, not the records
            return None

    return SimpleNamespace(
        name=name,
        export=get_task(name).export,
        training=SimpleNamespace(best_metric=lambda info: metric),
        prediction=Given(),
        evaluation=SimpleNamespace(evaluate=lambda model, tokenizer, info, data, options: {metric: scores[model]}),
    )


def _int8_check(task, data):
    from bertkit.exporting.checks import Report, compare_int8

    report = Report()
    compare_int8(task, "fp32", "int8", None, {}, data, None, report)
    return report


def test_ner_agreement_on_conll_data_compares_the_tags(tmp_path):
    """On CoNLL check data NER's results hold `tags`, not `entities`: the check compared nothing
    and reported every prediction equal."""
    from helpers.tiny import write_conll

    data = write_conll(tmp_path / "check.conll", 10, seed=1)

    def tags(model, record):
        return {"tokens": record["tokens"], "tags": ["O" if model == "fp32" else "B-PER"] * len(record["tokens"])}

    report = _int8_check(_FakeTask("ner", "f1", {"fp32": 0.9, "int8": 0.9}, tags), data)
    assert report.int8["records"] == 10 and report.int8["equal_predictions"] == 0.0


@pytest.mark.parametrize(("int8", "warned"), [(79.8, False), (79.0, True)])
def test_the_int8_warning_reads_qa_scores_on_their_0_to_100_scale(tmp_path, int8, warned):
    """QA's exact match and F1 are 0-100: half a point is 0.5 there, not 0.005 (a 0.2 point loss
    was reported as "20.00 points" and warned about)."""
    data = tmp_path / "check.jsonl"
    data.write_text(json.dumps({"question": "who?", "context": "alice met bob", "answers": ["alice"]}) + "\n")

    def answer(model, record):
        return {"answer": "alice", "score": 0.9, "start": 0}

    report = _int8_check(_FakeTask("qa", "f1", {"fp32": 80.0, "int8": int8}, answer), data)
    warnings = [n for n in report.notes if n.startswith("warning")]
    assert bool(warnings) == warned, report.notes
    if warned:
        assert "1.00 points of f1" in warnings[0]
    assert report.int8["loss"] == pytest.approx((80.0 - int8) / 100)


def test_the_fp32_check_runs_text_pairs_too(tiny_model):
    """The check fed single texts only, so the second segment (token_type_ids 1: pairs, QA's
    context) was never compared: a graph that ignored it passed."""
    from types import SimpleNamespace

    from transformers import AutoTokenizer

    from bertkit.core.errors import BertkitError
    from bertkit.exporting.checks import BUILT_IN, Report, check_fp32

    tokenizer = AutoTokenizer.from_pretrained(tiny_model)
    names = ["input_ids", "attention_mask", "token_type_ids"]

    def graph(ids, mask, segments):  # PyTorch: reads the segments
        return (ids + 1000 * segments).float()

    class Onnx:  # the "ONNX graph": reads the segments, or ignores them
        output_names = ["logits"]

        def __init__(self, reads_segments: bool):
            self.reads = reads_segments

        def __call__(self, **feed):
            return SimpleNamespace(logits=(feed["input_ids"] + 1000 * self.reads * feed["token_type_ids"]).astype("f4"))

    with pytest.raises(BertkitError, match="differ"):
        check_fp32(graph, Onnx(False), tokenizer, list(BUILT_IN), names, Report())
    report = Report()
    check_fp32(graph, Onnx(True), tokenizer, list(BUILT_IN), names, report)
    assert report.max_abs_diff == 0 and report.texts > len(BUILT_IN)


# ---------------------------------------------------------------- serve



"""Edges of issue 18 (ONNX export, the torch-free runtime, `bertkit serve`) found by testing the
built features against the issue's text: each test failed before its fix."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("onnxruntime")
pytest.importorskip("onnx")

ROOT = Path(__file__).resolve().parent.parent
ENV = {**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1", "OMP_NUM_THREADS": "1"}
# bertkit's CLI in a fresh process, then what it imported: torch or a transformers modelling module
MODULES = (
    "import sys\nfrom bertkit.cli import main\n"
    "try:\n    main(sys.argv[1:])\nexcept SystemExit as stop:\n    assert stop.code in (0, None), stop.code\n"
    "bad = [m for m in sys.modules if m.split('.')[0] == 'torch' or '.modeling_' in m]\n"
    "print('LOADED', bad[:5])\n"
)


def _loaded(*args) -> str:
    done = subprocess.run(
        [sys.executable, "-c", MODULES, *map(str, args)], capture_output=True, text=True, env=ENV, timeout=300
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


@pytest.fixture(scope="module")
def classify_onnx(classify_bundle, tmp_path_factory) -> Path:
    from bertkit.exporting.onnx import export_bundle

    target = tmp_path_factory.mktemp("edges") / "classify-onnx"
    export_bundle(str(classify_bundle), output=str(target))
    return target


@pytest.mark.slow
def test_evaluate_on_an_onnx_bundle_imports_no_torch(classify_onnx, easy_data, tmp_path):
    """`evaluate` loaded the `evaluate` library, whose import reaches transformers.pipelines and
    with it torch and the modelling code."""
    out = _loaded("evaluate", "-m", classify_onnx, "-d", easy_data["test"], "-o", tmp_path / "ev")
    assert "LOADED []" in out, out
    assert json.loads((tmp_path / "ev" / "metrics.json").read_text())["accuracy"] >= 0


# ---------------------------------------------------------------- the int8 check, on fake models


def _FakeTask(name, metric, scores, predict):
    """A task whose fp32 and int8 "models" (the strings) give the predictions and scores a test
    sets, with the named task's own export part, for the export's int8 check."""
    from types import SimpleNamespace

    from bertkit.tasks import get_task

    return SimpleNamespace(
        name=name,
        export=get_task(name).export,
        training=SimpleNamespace(best_metric=lambda info: metric),
        prediction=SimpleNamespace(
            records_per_pass=1024,
            is_empty=lambda record, info, options: False,
            predict=lambda model, tokenizer, info, records, options: (predict(model, r) for r in records),
        ),
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


class _FakePredictor:
    """What the app reads of a Predictor; `run` refuses a text without [MASK], as fill-mask does."""

    task = type("Task", (), {"name": "mlm-adapt"})()
    options = type("Options", (), {"batch_size": 8})()
    text_column = "text"

    def fields(self):
        return ["text"]

    def records_of_texts(self, texts):
        return [{"text": t} for t in texts]

    def characters(self, records):
        return sum(len(r["text"]) for r in records)

    def problems(self, records, where):  # the checks before batching let everything through
        return []

    def describe(self):
        return {"model": "fake", "task": "mlm-adapt", "runtime": "onnx", "labels": None}

    def run(self, records):
        from bertkit.core.errors import BertkitError

        for number, record in enumerate(records, 1):
            if "[MASK]" not in record["text"]:
                raise BertkitError(f"input record {number}: no [MASK] in {record['text']!r}")
        return [{"text": r["text"], "masks": []} for r in records]


@pytest.mark.parametrize(("body", "field"), [({"text": "x"}, "text"), ({"texts": ["a [MASK]", "x"]}, "texts")])
def test_a_request_the_model_refuses_is_a_422_naming_the_field(body, field):
    """The model's own refusal (fill-mask text without [MASK]) was a 422 whose detail was a bare
    string, unlike every other 422: it now names the field, as FastAPI's own do."""
    from fastapi.testclient import TestClient

    from bertkit.serving.app import build_app

    with TestClient(build_app(_FakePredictor())) as client:
        answer = client.post("/predict", json=body)
        assert answer.status_code == 422
        (problem,) = answer.json()["detail"]
        assert problem["loc"] == ["body", field] and "no [MASK]" in problem["msg"]
        assert client.post("/predict", json={"text": "a [MASK]"}).status_code == 200


@pytest.mark.parametrize("given", [".", "./", "bundle/", "bundle/."])
def test_the_default_output_sits_beside_the_bundle_however_it_is_named(tmp_path, monkeypatch, given):
    """`bertkit export -m .` from inside a bundle wrote a folder named `.-onnx` inside it."""
    from bertkit.exporting.onnx import default_output

    (tmp_path / "bundle").mkdir()
    monkeypatch.chdir(tmp_path / "bundle" if given.startswith(".") else tmp_path)
    assert default_output(given, None).resolve() == tmp_path / "bundle-onnx"
    assert default_output(given, "int8").resolve() == tmp_path / "bundle-onnx-int8"

"""`bertkit serve` is as strict as `bertkit predict` and as safe as a server must be: a record is
accepted or refused as `predict` accepts or refuses it (422 naming the field and the record),
the body is strict JSON in (no lone surrogate, NaN / Infinity / 1e999 or key given twice,
anywhere) and out, its size is limited as it streams (413), nothing internal leaks (/info without
paths, 500s generic with an error id that is in the log), a bad request never joins a batch, and
the command names the port it really has and exits 143 on SIGTERM while starting."""

import json
import logging
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

pytest.importorskip("fastapi")
pytest.importorskip("httpx")

from fastapi.testclient import TestClient  # noqa: E402

from bertkit.core.errors import BertkitError  # noqa: E402
from bertkit.serving.app import build_app  # noqa: E402
from bertkit.serving.predictor import Limits, Predictor  # noqa: E402


@pytest.fixture(scope="module")
def served(classify_model):
    app = build_app(Predictor(str(classify_model)), max_batch=4, max_wait_ms=5, limits=Limits(6, 400, 2_000))
    with TestClient(app) as running:
        yield running


def _post(client, raw: bytes | str, path="/predict", **headers):
    raw = raw.encode() if isinstance(raw, str) else raw
    return client.post(path, content=raw, headers={"Content-Type": "application/json", **headers})


# ---------------------------------------------------------------- strict JSON in


@pytest.mark.parametrize(
    ("raw", "loc"),
    [
        (r'{"texts": ["fine", "\ud800"]}', ["body", "texts", 1]),
        (r'{"text": "a \udfff b"}', ["body", "text"]),
        (r'{"records": [{"text": "a"}, {"text": "b", "id": "\ud83d"}]}', ["body", "records", 1, "id"]),
        (r'{"records": [{"text": "a", "meta": {"tags": ["x", "\udc00"]}}]}', ["body", "records", 0, "meta", "tags", 1]),
        (r'{"records": [{"text": "a", "\ud800": 1}]}', ["body", "records", 0]),
    ],
)
def test_a_lone_surrogate_anywhere_is_422_naming_where(served, raw, loc):
    answer = _post(served, raw)
    assert answer.status_code == 422, answer.text
    problem = answer.json()["detail"][0]
    assert problem["loc"] == loc and "surrogate" in problem["msg"]


@pytest.mark.parametrize("spelled", ["NaN", "Infinity", "-Infinity", "1e999", "-1E400"])
@pytest.mark.parametrize("where", ["id", "nested"])
def test_a_number_that_is_not_finite_anywhere_is_422(served, spelled, where):
    nested = f'{{"text": "a", "meta": [1, {{"x": {spelled}}}]}}'
    record = f'{{"text": "a", "id": {spelled}}}' if where == "id" else nested
    answer = _post(served, f'{{"records": [{{"text": "b"}}, {record}]}}')
    assert answer.status_code == 422, answer.text
    loc = ["body", "records", 1, "id"] if where == "id" else ["body", "records", 1, "meta", 1, "x"]
    assert answer.json()["detail"][0]["loc"] == loc
    json.loads(answer.text, parse_constant=lambda name: pytest.fail(f"{name} in the answer"))


@pytest.mark.parametrize(
    ("raw", "words"),
    [
        ('{"records": [{"text": "a", "text": "b"}]}', "twice"),
        ('{"texts": ["a"], "texts": ["b"]}', "twice"),
        (b'{"text": "caf\xe9"}', "UTF-8"),
        ('{"text": "a"', "not valid JSON"),
        ('{"records": [{"text": "a", "id": ' + "[" * 100_000 + "]" * 100_000 + "}]}", "nested"),
        ('{"records": [{"text": "a", "id": ' + "7" * 5000 + "}]}", "digits"),
        ('{"records": [{"text": "a", "id": ' + "[" * 900 + "]" * 900 + "}]}", "nested"),  # within json's reach
    ],
)
def test_json_the_readers_refuse_is_422(classify_model, raw, words):  # noqa: F811
    app = build_app(Predictor(str(classify_model)), limits=Limits(6, 400, 10_000_000))
    with TestClient(app) as client:
        answer = _post(client, raw)
    assert answer.status_code == 422 and words in answer.text, answer.text


# ---------------------------------------------------------------- as strict as predict: the same records


def _predicted(model: Path, record: dict, tmp_path: Path):
    """What `bertkit predict` makes of one record in a JSON lines file: its result, or its error."""
    from bertkit.prediction import predict_file

    source, out = tmp_path / "in.jsonl", tmp_path / "out.jsonl"
    source.write_text(json.dumps(record) + "\n", encoding="utf-8")
    try:
        predict_file(str(model), str(source), str(out))
    except BertkitError as err:
        return err
    return json.loads(out.read_text(encoding="utf-8"))


def _agree(client, model, record, tmp_path, field):
    offline = _predicted(model, record, tmp_path)
    answer = client.post("/predict", json={"records": [{"text": "fine"}, record]} if "question" not in json.dumps(
        record) else {"records": [record]})
    index = 0 if "question" in json.dumps(record) else 1
    if isinstance(offline, BertkitError):
        assert answer.status_code == 422, (record, answer.text)
        problem = answer.json()["detail"][0]
        assert problem["loc"][:3] == ["body", "records", index], problem
        if field:
            assert problem["loc"] == ["body", "records", index, field], problem
    else:
        assert answer.status_code == 200, (record, offline, answer.text)
        assert answer.json()["results"][index] == offline


@pytest.mark.parametrize(
    ("record", "field"),
    [
        ({"text": 5}, None),  # predict reads a number as its text
        ({"text": 2.5, "id": 7}, None),
        ({"text": None}, None),  # null: the empty result
        ({"text": "ok", "id": {"a": [1, None]}}, None),  # other fields kept as they are
        ({"text": ["a list"]}, "text"),
        ({"text": True}, "text"),
        ({"text": {"a": 1}}, "text"),
        ({"id": 1}, "text"),
    ],
)
def test_classify_records_are_accepted_and_refused_as_predict_does(served, classify_model, tmp_path, record, field):  # noqa: F811
    _agree(served, classify_model, record, tmp_path, field)


@pytest.fixture(scope="module")
def ner_client(head_models):
    with TestClient(build_app(Predictor(str(head_models["ner"])))) as running:
        yield running


@pytest.mark.parametrize(
    ("record", "field"),
    [
        ({"tokens": ["Paris", "is", "in", "France"]}, None),  # token lists, which predict reads
        ({"tokens": ["Paris", 2024], "id": 3}, None),
        ({"tokens": []}, None),
        ({"text": "Paris is in France"}, None),
        ({"tokens": "Paris is in France"}, "tokens"),
        ({"tokens": ["Paris", None]}, "tokens"),
        ({"tokens": ["Paris", ["is"]]}, "tokens"),
        ({"tokens": 5}, "tokens"),
        ({"words": ["Paris"]}, "text"),
    ],
)
def test_ner_records_are_accepted_and_refused_as_predict_does(ner_client, head_models, tmp_path, record, field):
    _agree(ner_client, head_models["ner"], record, tmp_path, field)


@pytest.fixture(scope="module")
def qa_client(head_models):
    with TestClient(build_app(Predictor(str(head_models["qa"])), max_batch=16, max_wait_ms=300)) as running:
        yield running


@pytest.mark.parametrize(
    ("record", "field"),
    [
        ({"question": "where is Paris", "context": "Paris is in France.", "id": 4}, None),
        ({"question": "", "context": ""}, None),  # both blank: the empty result
        ({"question": "where is Paris", "context": " "}, "context"),
        ({"question": "", "context": "Paris is in France."}, "question"),
        ({"question": "where is Paris"}, "context"),
        ({"question": ["where"], "context": "Paris is in France."}, "question"),
    ],
)
def test_qa_records_are_accepted_and_refused_as_predict_does(qa_client, head_models, tmp_path, record, field):
    _agree(qa_client, head_models["qa"], record, tmp_path, field)


def test_qa_ids_are_unique_within_a_request_not_across_requests(qa_client):
    record = {"question": "where is Paris", "context": "Paris is in France.", "id": "q1"}
    twice = qa_client.post("/predict", json={"records": [record, record]})
    assert twice.status_code == 422 and twice.json()["detail"][0]["loc"] == ["body", "records", 1, "id"]
    before = qa_client.app.state.batcher.stats.batches
    answers = _together(qa_client, [{"records": [record]}] * 6)
    assert [a.status_code for a in answers] == [200] * 6  # the same id from six clients, in one batch
    assert qa_client.app.state.batcher.stats.batches - before < 6


def test_fill_mask_without_the_mask_is_422_before_the_model(head_models):
    with TestClient(build_app(Predictor(str(head_models["mlm"])))) as running:
        answer = running.post("/predict", json={"texts": ["Paris is in [MASK].", "no mask here"]})
        assert answer.status_code == 422 and answer.json()["detail"][0]["loc"] == ["body", "texts", 1]
        assert running.app.state.batcher.stats.batches == 0  # refused before it joined a batch


# ---------------------------------------------------------------- a bad request never shrinks a batch


def _together(client, bodies: list) -> list:
    """Send the bodies at once from as many threads; the answers in order."""
    answers: list = [None] * len(bodies)
    start = threading.Barrier(len(bodies))

    def ask(index):
        start.wait()
        raw = bodies[index] if isinstance(bodies[index], str) else json.dumps(bodies[index])
        answers[index] = _post(client, raw)

    threads = [threading.Thread(target=ask, args=(i,)) for i in range(len(bodies))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return answers


@pytest.mark.parametrize("bad", [r'{"text": "\ud800"}', '{"records": [{"text": ["a list"]}]}'])
def test_one_bad_request_in_each_batch_does_not_shrink_the_batches(classify_model, bad):  # noqa: F811
    """Seven good requests and a bad one arrive together, three times over: the good ones share
    one batch each time (before, the bad one joined it, the batch failed, and all eight ran
    alone)."""
    app = build_app(Predictor(str(classify_model)), max_batch=8, max_wait_ms=400)
    with TestClient(app) as client:
        for _ in range(3):
            answers = _together(client, [{"text": f"good text {i}"} for i in range(7)] + [bad])
            assert [a.status_code for a in answers] == [200] * 7 + [422]
        stats = app.state.batcher.stats.to_json()
    assert stats["records"] == 21 and stats["mean"] >= 5, stats


# ---------------------------------------------------------------- strict JSON out, no leaks


def test_a_non_finite_result_is_a_generic_500_with_an_error_id_in_the_log(served, monkeypatch, caplog):
    monkeypatch.setattr(served.app.state.batcher, "run", lambda records: [{"score": float("nan")} for _ in records])
    with caplog.at_level(logging.ERROR):
        answer = served.post("/predict", json={"text": "a"})
    assert answer.status_code == 500 and "NaN" not in answer.text
    error_id = answer.json()["error_id"]
    assert error_id in answer.json()["detail"] and error_id in caplog.text and "ValueError" in caplog.text


def test_a_model_failure_shows_no_exception_text(served, monkeypatch, caplog):
    def failing(records):
        raise RuntimeError("CUDA out of memory at /secret/path/model.bin")

    monkeypatch.setattr(served.app.state.batcher, "run", failing)
    with caplog.at_level(logging.ERROR):
        answer = served.post("/predict", json={"text": "a"})
    assert answer.status_code == 500 and "secret" not in answer.text and "RuntimeError" not in answer.text
    assert answer.json()["error_id"] in caplog.text and "/secret/path" in caplog.text
    monkeypatch.undo()
    assert served.post("/predict", json={"text": "a"}).status_code == 200  # and it keeps serving


def test_a_bug_outside_the_model_is_a_generic_500_too(served, monkeypatch, caplog):
    def broken(records, where):
        raise KeyError("/secret/path")

    predictor = served.app.state.batcher.run.__self__
    monkeypatch.setattr(predictor, "problems", broken)
    with caplog.at_level(logging.ERROR):
        answer = served.post("/predict", json={"text": "a"})
    assert answer.status_code == 500 and "secret" not in answer.text
    assert answer.headers["content-type"] == "application/json" and answer.json()["error_id"] in caplog.text


def test_info_and_the_page_show_no_paths_of_the_server(classify_model, tmp_path):  # noqa: F811
    predictor = Predictor(str(classify_model))
    predictor.info = {**predictor.info, "base_model": str(tmp_path / "private" / "base-bert")}
    with TestClient(build_app(predictor)) as client:
        info = client.get("/info").json()
        shown = client.get("/info").text + client.get("/").text + client.get("/openapi.json").text
    assert info["model"] == classify_model.name and info["base_model"] == "base-bert"
    assert str(tmp_path) not in shown and str(classify_model.parent) not in shown
    predictor.info = {**predictor.info, "base_model": "google/bert_uncased_L-2_H-128_A-2"}  # a hub id stays whole
    assert predictor.describe()["base_model"] == "google/bert_uncased_L-2_H-128_A-2"


# ---------------------------------------------------------------- the size of a body


def test_a_body_over_the_limit_is_413_whatever_it_holds(served):
    extra = '{"texts": ["a"], "padding": "' + "x" * 3000 + '"}'  # 2,000 bytes at most here
    answer = _post(served, extra)
    assert answer.status_code == 413 and "--max-body-bytes" in answer.json()["detail"]

    def chunks():  # no Content-Length: counted as it arrives
        yield b'{"texts": ["a"], "padding": "'
        for _ in range(100):
            yield b"x" * 100
        yield b'"}'

    chunked = served.post("/predict", content=chunks(), headers={"Content-Type": "application/json"})
    assert chunked.status_code == 413 and "more than 2,000 bytes" in chunked.json()["detail"]
    assert served.get("/info").json()["limits"]["max_body_bytes"] == 2000
    assert _post(served, '{"texts": ["a"], "padding": "x"}').status_code == 422  # under it: read, then refused


def test_the_default_body_limit_holds_max_chars_of_escaped_text():
    assert Limits().body_bytes() == 4 * 1024 * 1024
    assert Limits(max_chars=1_000_000).body_bytes() == 16_000_000
    text = "\U0001f600" * 200_000  # the worst spelling: 12 bytes a character
    assert len(json.dumps({"texts": [text]})) < Limits().body_bytes()


# ---------------------------------------------------------------- the command: port 0, signals while starting


def _command(model, *more) -> list[str]:
    return [sys.executable, "-m", "bertkit", "serve", "--model", str(model), *map(str, more)]


# --port 0 printing the port it got: tests/test_serve.py::test_sigterm_answers_the_requests_in_flight


@pytest.mark.spawns
def test_sigterm_while_starting_exits_143_at_every_moment(classify_model):  # noqa: F811
    """SIGTERM at many moments of start-up (the CLI starting, torch importing, the model loading):
    always 143, never an abort (134, a signal handler raising inside torch's C++ start-up) or a
    traceback. The servers start side by side, each signalled at its own moment."""
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    delays = [0.3 + 0.35 * i for i in range(12)]
    processes = [
        subprocess.Popen(_command(classify_model, "--port", 0), env=env, stderr=subprocess.PIPE, text=True)
        for _ in delays
    ]
    try:
        started = time.monotonic()
        for process, delay in zip(processes, delays, strict=True):
            time.sleep(max(0.0, started + delay - time.monotonic()))
            process.send_signal(signal.SIGTERM)
        outcomes = []
        for process, delay in zip(processes, delays, strict=True):
            code = process.wait(90)
            err = process.stderr.read()
            outcomes.append((delay, code, "serving" in err, err[-300:]))
    finally:
        for process in processes:
            if process.poll() is None:
                process.kill()
    for delay, code, up, err in outcomes:
        assert "Traceback" not in err, (delay, err)
        # -15: the signal came before Python ran any of bertkit (the interpreter starting), and the
        # system ended the process as SIGTERM does; a shell shows both as 143
        assert code in ((0,) if up else (143, -signal.SIGTERM)), (delay, code, err)
    assert sum(code == 143 for _, code, _, _ in outcomes) >= 6, outcomes  # most came while bertkit was starting


# ---------------------------------------------------------------- texts as records, messages in the request's terms


@pytest.mark.parametrize("value", [5, 2.5, None, "fine"])
def test_a_text_is_read_alike_in_texts_text_and_records(served, value):
    as_records = served.post("/predict", json={"records": [{"text": value}]})
    assert as_records.status_code == 200, as_records.text
    for body in ({"texts": [value]}, {"text": value}):
        if body.get("text", "") is None:
            continue  # "text": null is no input given
        answer = served.post("/predict", json=body)
        assert answer.status_code == 200, (body, answer.text)
        assert answer.json()["results"] == as_records.json()["results"], body


@pytest.mark.parametrize("value", [True, ["a"], {"a": 1}])
def test_a_text_that_is_no_text_is_refused_alike_in_texts_and_records(served, value):
    for body in ({"texts": ["fine", value]}, {"records": [{"text": "fine"}, {"text": value}]}):
        answer = served.post("/predict", json=body)
        assert answer.status_code == 422, (body, answer.text)
        assert answer.json()["detail"][0]["loc"][:3] == ["body", next(iter(body)), 1], answer.text


def _missing_field_message(client, record) -> str:
    answer = client.post("/predict", json={"records": [record]})
    assert answer.status_code == 422, answer.text
    (problem,) = answer.json()["detail"]
    return problem["msg"]


def test_a_record_without_its_field_is_told_in_the_requests_terms(served, ner_client, qa_client):
    for client, record, field in (
        (served, {"body": "hello"}, "'text'"),
        (ner_client, {"words": ["Paris"]}, "'tokens'"),
        (qa_client, {"question": "where is Paris"}, "'context'"),
    ):
        message = _missing_field_message(client, record)
        assert field in message and '{"records"' in message, message
        assert "--" not in message and "qa.question_field" not in message, message


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

"""`bertkit serve`: micro-batching, the HTTP contract (results equal `bertkit predict`'s, clear
422 / 413 / 500 answers, the server keeps serving), the page, and a real server process that
answers its requests in flight when stopped."""

import asyncio
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path

import pytest

pytest.importorskip("fastapi")
pytest.importorskip("httpx")

from fastapi.testclient import TestClient  # noqa: E402

from bertkit.serving.app import build_app  # noqa: E402
from bertkit.serving.batching import MicroBatcher  # noqa: E402
from bertkit.serving.predictor import Limits, Predictor  # noqa: E402

TEXTS = ["a good film", "", "the plot was dull and slow", "ok", "London is big"]


# ---------------------------------------------------------------- micro-batching


def _batcher(run, max_batch=8, max_wait=0.05):
    calls = []

    def recording(records):
        calls.append([r["n"] for r in records])
        return run(records)

    return MicroBatcher(recording, max_batch, max_wait), calls


def _gather(batcher, requests):
    async def go():
        await batcher.start()
        try:
            return await asyncio.gather(*(batcher.submit(r) for r in requests), return_exceptions=True)
        finally:
            await batcher.stop()

    return asyncio.run(go())


def test_concurrent_requests_share_one_batch_and_get_their_own_results():
    batcher, calls = _batcher(lambda records: [{"twice": r["n"] * 2} for r in records])
    requests = [[{"n": 10 * i + j} for j in range(2)] for i in range(4)]
    answers = _gather(batcher, requests)
    assert answers == [[{"twice": 2 * r["n"]} for r in request] for request in requests]
    assert len(calls) == 1 and sorted(calls[0]) == sorted(r["n"] for q in requests for r in q)
    assert batcher.stats.to_json()["largest"] == 8


def test_batches_stay_within_max_batch_and_a_large_request_runs_alone_unsplit():
    batcher, calls = _batcher(lambda records: [dict(r) for r in records], max_batch=4)
    requests = [[{"n": i}] for i in range(6)] + [[{"n": 100 + j} for j in range(7)]]
    answers = _gather(batcher, requests)
    assert answers == requests
    assert all(len(c) <= 4 for c in calls if not any(n >= 100 for n in c))
    assert [c for c in calls if any(n >= 100 for n in c)] == [list(range(100, 107))]


def test_a_failing_request_fails_alone_and_the_others_are_answered():
    def run(records):
        if any(r["n"] == 3 for r in records):
            raise ValueError("record 3 breaks the model")
        return [{"n": r["n"]} for r in records]

    batcher, calls = _batcher(run)
    answers = _gather(batcher, [[{"n": i}] for i in range(5)])
    assert isinstance(answers[3], ValueError)
    assert [a for i, a in enumerate(answers) if i != 3] == [[{"n": i}] for i in (0, 1, 2, 4)]


def test_max_batch_one_runs_every_request_on_its_own():
    batcher, calls = _batcher(lambda records: [{} for _ in records], max_batch=1)
    _gather(batcher, [[{"n": i}] for i in range(5)])
    assert sorted(calls) == [[i] for i in range(5)]


# ---------------------------------------------------------------- the HTTP contract


def _offline(model: Path, records: list[dict], tmp_path: Path) -> list[dict]:
    from bertkit.prediction import predict_file

    source = tmp_path / "in.jsonl"
    source.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    predict_file(str(model), str(source), str(tmp_path / "out.jsonl"))
    return [json.loads(line) for line in (tmp_path / "out.jsonl").read_text(encoding="utf-8").splitlines()]


@pytest.fixture(scope="module")
def client(classify_model):
    app = build_app(Predictor(str(classify_model)), max_batch=4, max_wait_ms=5, limits=Limits(6, 400))
    with TestClient(app) as running:
        yield running


def test_results_equal_what_predict_writes(client, classify_model, tmp_path):
    answer = client.post("/predict", json={"texts": TEXTS})
    assert answer.status_code == 200
    expected = _offline(classify_model, [{"text": t} for t in TEXTS], tmp_path)
    assert answer.json()["results"] == expected
    assert answer.json()["results"][1]["empty"] is True
    one = client.post("/predict", json={"text": TEXTS[0]}).json()["results"]
    assert one == expected[:1]
    records = client.post("/predict", json={"records": [{"text": t, "id": i} for i, t in enumerate(TEXTS[:3])]})
    assert [r["id"] for r in records.json()["results"]] == [0, 1, 2]


def test_concurrent_clients_each_get_their_own_answers(client):
    expected = {t: client.post("/predict", json={"text": t}).json()["results"] for t in TEXTS}
    got: dict = {}

    def ask(text):
        got[text] = client.post("/predict", json={"text": text}).json()["results"]

    threads = [threading.Thread(target=ask, args=(t,)) for t in TEXTS * 3]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert got == expected


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"texts": "not a list"}, "texts"),
        ({"texts": ["a", [3]]}, "texts"),  # a list is no text (a number is, as predict reads it)
        ({"txt": ["a"]}, "txt"),
        ({"records": [{"text": "a"}, {"id": 1}]}, "text"),
        ({"records": [{"text": [5]}]}, "text"),
    ],
)
def test_malformed_requests_are_422_naming_the_field(client, body, field):
    answer = client.post("/predict", json=body)
    assert answer.status_code == 422
    assert field in json.dumps(answer.json()["detail"])


def test_not_json_and_no_input_are_422(client):
    broken = client.post("/predict", content=b"{not json", headers={"Content-Type": "application/json"})
    assert broken.status_code == 422
    answer = client.post("/predict", json={"texts": ["a"], "text": "b"})
    assert answer.status_code == 422 and "exactly one" in json.dumps(answer.json())
    assert client.post("/predict", json={}).status_code == 422


def test_too_much_in_one_request_is_413_with_the_limits(client):
    many = client.post("/predict", json={"texts": ["a"] * 7})
    assert many.status_code == 413 and "at most 6" in many.json()["detail"]
    long = client.post("/predict", json={"text": "x" * 401})
    assert long.status_code == 413 and "at most 400" in long.json()["detail"]


def test_a_model_failure_is_500_and_the_server_keeps_serving(client, monkeypatch):
    predictor_run = client.app.state.batcher.run

    def failing(records):
        if any(r.get("text") == "boom" for r in records):
            raise RuntimeError("CUDA out of memory (simulated)")
        return predictor_run(records)

    monkeypatch.setattr(client.app.state.batcher, "run", failing)
    answer = client.post("/predict", json={"text": "boom"})
    assert answer.status_code == 500 and answer.json()["error_id"] in answer.json()["detail"]
    assert "out of memory" not in answer.text  # the details are in the server's log, not the answer
    assert client.post("/predict", json={"text": "fine"}).status_code == 200


def test_health_info_docs_and_embed_on_a_classifier(client):
    assert client.get("/health").json() == {"status": "ok"}
    info = client.get("/info").json()
    assert info["task"] == "classify" and info["labels"] == ["negative", "positive", "neutral"]
    assert info["runtime"] == "torch"
    assert info["limits"] == {"max_texts": 6, "max_chars": 400, "max_body_bytes": 4 * 1024 * 1024}
    assert info["batching"]["max_batch"] == 4
    assert "/predict" in client.get("/openapi.json").json()["paths"]
    refused = client.post("/embed", json={"text": "a"})
    assert refused.status_code == 400 and "/predict" in refused.json()["detail"]


def test_the_page_names_the_model_escaped_and_is_self_contained(client):
    page = client.get("/").text
    assert "&lt;classify&gt;" in page and "<classify>" not in page.split("<script", 1)[0]
    assert "src=" not in page and "http" not in page.split("<script", 1)[1]  # nothing fetched from elsewhere
    assert '"task": "classify"' in page


@pytest.mark.parametrize("kind", ["ner", "qa"])
def test_ner_and_qa_answers_equal_predict(head_models, kind, tmp_path):
    records = (
        [{"text": "Paris is in France"}, {"text": ""}]
        if kind == "ner"
        else [{"question": "where is Paris", "context": "Paris is in France."}]
    )
    with TestClient(build_app(Predictor(str(head_models[kind])))) as running:
        body = {"texts": [r["text"] for r in records]} if kind == "ner" else {"records": records}
        answer = running.post("/predict", json=body)
        assert answer.status_code == 200
        assert answer.json()["results"] == _offline(head_models[kind], records, tmp_path)
        if kind == "qa":  # a QA model reads records: "texts" says what to send
            refused = running.post("/predict", json={"texts": ["where"]})
            assert refused.status_code == 422 and "'question': ..." in refused.json()["detail"][0]["msg"]


# ---------------------------------------------------------------- the command


def test_a_busy_port_is_refused_before_the_model_loads(cli, tmp_path):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        code, out, err = cli("serve", "--model", tmp_path / "nothing", "--port", port)
    assert code == 2 and f"--port {port}" in out + err and "cannot listen" in out + err


def test_a_missing_extra_names_the_pip_install(cli, tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "uvicorn", None)  # import fails
    code, out, err = cli("serve", "--model", tmp_path, "--port", "0")
    assert code == 2 and "pip install -e '.[serve]'" in out + err


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _wait_up(url: str, process, seconds=90):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise AssertionError(f"the server stopped: {process.stderr.read()}")
        try:
            with urllib.request.urlopen(url + "/health", timeout=1):
                return
        except OSError:
            time.sleep(0.3)
    raise AssertionError("the server did not come up")


def _announced(process, seconds=90) -> str:
    """The URL in the server's `serving ... on http://HOST:PORT/` line, read as it is printed
    (by a thread: a server that never prints it must fail the test, not hang it)."""
    import queue
    import re

    lines: queue.Queue = queue.Queue()
    threading.Thread(target=lambda: [lines.put(line) for line in process.stderr], daemon=True).start()
    seen, deadline = [], time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            line = lines.get(timeout=0.5)
        except queue.Empty:
            if process.poll() is not None:
                break
            continue
        seen.append(line)
        found = re.search(r"on (http://127\.0\.0\.1:(\d+))/", line)
        if found:
            assert int(found.group(2)) != 0, line
            return found.group(1)
    raise AssertionError(f"no 'serving ... on http://...' line: {''.join(seen)}")


@pytest.mark.spawns
def test_sigterm_answers_the_requests_in_flight(classify_model):
    """With --port 0, the server names the port it really got (the line is whole in a narrow
    terminal, and printed once it accepts connections); SIGTERM answers the requests in flight."""
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "COLUMNS": "40"}
    command = [sys.executable, "-m", "bertkit", "serve", "--model", str(classify_model), "--port", "0"]
    command += ["--max-wait-ms", "1500"]
    process = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        url = _announced(process)
        with urllib.request.urlopen(url + "/health", timeout=5) as health:  # up as soon as it says so
            assert json.loads(health.read()) == {"status": "ok"}
        answers = []

        def ask():
            request = urllib.request.Request(
                url + "/predict", json.dumps({"texts": TEXTS}).encode(), {"Content-Type": "application/json"}
            )
            with urllib.request.urlopen(request, timeout=30) as response:
                answers.append((response.status, json.loads(response.read())))

        asking = threading.Thread(target=ask)
        asking.start()
        time.sleep(0.5)  # the request waits in the batcher (1.5 s) when the signal comes
        process.send_signal(signal.SIGTERM)
        asking.join(30)
        assert process.wait(30) == 0  # a server stopped by SIGTERM has done its job
        assert answers and answers[0][0] == 200 and len(answers[0][1]["results"]) == len(TEXTS)
    finally:
        if process.poll() is None:
            process.kill()


@pytest.mark.spawns
@pytest.mark.parametrize("kind", ["classify", "ner", "qa"])
def test_the_page_works_in_a_real_browser(kind, classify_model, head_models, tmp_path):
    """The page as a person sees it: opened with a text in its link, it draws the result."""
    import urllib.parse

    from helpers.real_parts import CHROMIUM_FLAGS, chromium

    browser = chromium()  # skipped where there is none, failed under CI (.ci/run installs it)
    model = classify_model if kind == "classify" else head_models[kind]
    port = _free_port()
    url = f"http://127.0.0.1:{port}"
    command = [sys.executable, "-m", "bertkit", "serve", "--model", str(model), "--port", str(port)]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    query = {"text": "where is Paris" if kind == "qa" else "Paris is in France"}
    if kind == "qa":
        query["context"] = "Paris <b>is</b> in France."
    try:
        _wait_up(url, process)
        profile = tmp_path / "chromium-profile"
        dom = subprocess.run(
            [browser, *CHROMIUM_FLAGS, f"--user-data-dir={profile}", "--virtual-time-budget=10000", "--dump-dom",
             f"{url}/?{urllib.parse.urlencode(query)}"],
            capture_output=True, text=True, timeout=90,
        ).stdout
        drawn = dom.split('id="result"', 1)[1].split("<script", 1)[0]
        assert 'id="error" class=""></div>' in dom or '<div id="error"></div>' in dom, dom
        if kind == "classify":
            expected = _offline(model, [{"text": query["text"]}], tmp_path)[0]
            assert drawn.count('class="bar') == 3, drawn  # one bar per label, the predicted one marked
            assert f'<span class="name">{expected["label"]}</span>' in drawn.split('class="bar best"', 1)[1][:200]
        elif kind == "ner":
            assert "Paris" in drawn and "France" in drawn
        else:  # the answer marked in its context, the context's markup shown as text
            assert "Answer:" in drawn and "<mark>" in drawn
            assert "&lt;b&gt;" in drawn and "<b>is</b>" not in drawn
    finally:
        process.terminate()
        process.wait(30)


@pytest.mark.slow
def test_embed_answers_vectors_equal_to_predict(tiny_model, tmp_path, cli):
    """An embed bundle: /embed (and /predict) give each text's vector, as `predict` does."""
    from test_embed import embed_config, write_pairs

    train, dev = write_pairs(tmp_path / "train.jsonl", 48, 1), write_pairs(tmp_path / "dev.jsonl", 16, 2)
    config = embed_config(tmp_path, tiny_model, train, dev).read_text().replace("epochs: 4", "epochs: 1")
    (tmp_path / "embed.yaml").write_text(config)
    code, _, err = cli("train", "embed", "-c", tmp_path / "embed.yaml")
    assert code == 0, err
    model, texts = tmp_path / "embedder", ["a good film", "London is big", ""]
    with TestClient(build_app(Predictor(str(model)))) as running:
        assert running.get("/info").json()["task"] == "embed"
        answer = running.post("/embed", json={"texts": texts})
        assert answer.status_code == 200
        results = answer.json()["results"]
        assert results == _offline(model, [{"query": t} for t in texts], tmp_path)
        assert len(results[0]["embedding"]) == 64 and results[2]["empty"] is True
        assert running.post("/predict", json={"texts": texts}).json()["results"] == results


def test_an_onnx_bundle_is_served_with_the_onnx_runtime(classify_model, tmp_path, cli):
    pytest.importorskip("onnxruntime")
    exported = tmp_path / "onnx"
    code, out, err = cli("export", "--model", classify_model, "--format", "onnx", "--output", exported)
    assert code == 0, out + err
    with TestClient(build_app(Predictor(str(exported)))) as running:
        assert running.get("/info").json()["runtime"] == "onnx"
        answer = running.post("/predict", json={"texts": TEXTS})
        assert answer.status_code == 200
        assert answer.json()["results"] == _offline(exported, [{"text": t} for t in TEXTS], tmp_path)

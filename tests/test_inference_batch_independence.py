"""A text's result is a function of the text alone: for every task and every bundle kind (PyTorch,
ONNX fp32, ONNX int8), the line predicted for a record alone is byte for byte the line it gets
among 200 records of mixed lengths (any order, any batch size), and `bertkit serve`, which batches
concurrent requests together, answers exactly what `bertkit predict` writes."""

import json
import random
import threading
from pathlib import Path

import pytest
from helpers.tiny import FILLER, NEGATIVE, POSITIVE, ner_sentence, qa_paragraph

pytest.importorskip("onnxruntime")

from bertkit.core.outputs.records import json_line  # noqa: E402

KINDS = ["torch", "onnx-fp32", "onnx-int8"]
TASKS = ["classify", "ner", "qa", "embed", "mlm-adapt"]
MANY = 200


def _column(bundle: Path) -> str:
    """The field a bundle reads its text from (`text`, or the column it was trained on)."""
    from bertkit.tasks.bundle import open_bundle
    from bertkit.tasks.contract.options import PredictOptions

    return PredictOptions().text_field(open_bundle(str(bundle), False, None).info)


def _records(task: str, column: str = "text", n: int = MANY) -> list[dict]:
    """`n` records of very different lengths (1 to ~80 words; some past max_length), a few empty."""
    rng = random.Random(7)
    rows = []
    for i in range(n):
        length = rng.choice([1, 2, 3, 5, 8, 13, 21, 40, 80])
        if task == "qa":
            question, context, _ = qa_paragraph(rng, max(length, 6), with_person=rng.random() < 0.7)
            rows.append({"id": str(i), "question": question, "context": context})
            continue
        if task == "ner":
            words = []
            while len(words) < length:
                words += ner_sentence(rng)[0]
            text = " ".join(words[:length])
        else:
            text = " ".join(rng.choices(FILLER + POSITIVE + NEGATIVE, k=length))
        if task == "mlm-adapt":  # the mask within the model's first 32 tokens, the text maybe past them
            words = text.split()
            words.insert(min(len(words), i % 5), "[MASK]")
            text = " ".join(words)
        rows.append({"id": str(i), column: "" if i % 50 == 7 else text})
    return rows


@pytest.fixture(scope="module")
def kinds(bundles, tmp_path_factory):
    """Each task's bundle as PyTorch, ONNX fp32 and ONNX int8 (exported once for the module)."""
    from bertkit.cli import main

    folder = tmp_path_factory.mktemp("kinds")
    made: dict[tuple[str, str], Path] = {}

    def get(task: str, kind: str) -> Path:
        if kind == "torch":
            return bundles[task]
        if (task, kind) not in made:
            target = folder / f"{task}-{kind}"
            extra = ["--quantize", "int8"] if kind == "onnx-int8" else []
            try:
                main(["export", "-m", str(bundles[task]), "-o", str(target), *extra])
            except SystemExit as stop:
                assert stop.code in (0, None)
            made[task, kind] = target
        return made[task, kind]

    return get


def _runner(bundle: Path, batch_size: int):
    from bertkit.prediction import aligned
    from bertkit.tasks import get_task
    from bertkit.tasks.bundle import open_bundle
    from bertkit.tasks.contract.options import PredictOptions

    opened = open_bundle(str(bundle), False, None)
    task = get_task(opened.task)
    tokenizer, model = opened.load_tokenizer(), opened.load_model(task.auto_model, "cpu")
    options = PredictOptions(batch_size=batch_size)
    options = PredictOptions(batch_size=batch_size, text_column=options.text_field(opened.info))

    def run(records: list[dict]) -> list[str]:
        return [json_line(r) for r in aligned(task, model, tokenizer, opened.info, records, options)]

    return run


@pytest.mark.slow
@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("task", TASKS)
def test_a_record_gets_the_same_line_alone_and_among_200(task, kind, kinds):
    records = _records(task, _column(kinds(task, kind)))
    run = _runner(kinds(task, kind), batch_size=32)
    together = run(records)
    order = list(range(len(records)))
    random.Random(3).shuffle(order)
    shuffled = _runner(kinds(task, kind), batch_size=7)([records[i] for i in order])
    assert [shuffled[order.index(i)] for i in range(len(records))] == together
    lengths = [len(json.dumps(r)) for r in records]
    picked = sorted({*range(0, len(records), 9), lengths.index(max(lengths)), lengths.index(min(lengths))})
    alone = {i: run([records[i]])[0] for i in picked}
    differing = [i for i in picked if alone[i] != together[i]]
    assert not differing, f"{len(differing)} of {len(picked)} lines differ, e.g. {alone[differing[0]][:300]}"


@pytest.mark.slow
@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("task", TASKS)
def test_serve_answers_what_predict_writes(task, kind, kinds, tmp_path, cli):
    """Requests sent at once from several threads (so the server batches them with one another)
    get, parsed, exactly the values of `bertkit predict`'s lines for the same records."""
    pytest.importorskip("fastapi")
    from fastapi.testclient import TestClient

    from bertkit.serving.app import build_app
    from bertkit.serving.predictor import Predictor

    bundle = kinds(task, kind)
    records = _records(task, _column(bundle), 60)
    source = tmp_path / "in.jsonl"
    source.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    code, _, err = cli("predict", "-m", bundle, "-i", source, "-o", tmp_path / "out.jsonl")
    assert code == 0, err
    offline = [json.loads(line) for line in (tmp_path / "out.jsonl").read_text(encoding="utf-8").splitlines()]
    served: dict[int, dict] = {}
    with TestClient(build_app(Predictor(str(bundle)), max_batch=32, max_wait_ms=50)) as client:

        def ask(start: int, size: int) -> None:
            answer = client.post("/predict", json={"records": records[start : start + size]})
            assert answer.status_code == 200, answer.text
            for offset, result in enumerate(answer.json()["results"]):
                served[start + offset] = result

        starts, rng, at = [], random.Random(5), 0
        while at < len(records):
            size = rng.choice([1, 2, 5])
            starts.append((at, size))
            at += size
        threads = [threading.Thread(target=ask, args=where) for where in starts]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    assert [served[i] for i in range(len(records))] == offline


def test_a_features_batch_shape_depends_on_its_own_length_alone():
    from bertkit.core.inference import bucket_length, bucket_rows, fixed_shapes

    rng = random.Random(3)
    features = [{"input_ids": [0] * rng.randint(1, 130)} for _ in range(300)]
    shape_of = {}
    for batch, (rows, length) in fixed_shapes(features, list(range(300)), positions=128):
        assert len(batch) <= rows and rows * length <= max(1024, length)
        for index in batch:
            n = len(features[index]["input_ids"])
            assert length == bucket_length(n, 128) >= n and rows == bucket_rows(length)
            shape_of[index] = (rows, length)
    assert sorted(shape_of) == list(range(300))  # every feature once
    for index in rng.sample(range(300), 20):  # alone, a feature gets the batch shape it had among all
        assert [shape for _, shape in fixed_shapes(features, [index], positions=128)] == [shape_of[index]]
    assert bucket_length(127, 128) == 128 and bucket_length(126, 127) == 127 and bucket_length(130, 128) == 130

"""`bertkit train qa` end to end on a tiny model: SQuAD v1 and v2 files, predict in every input
form (JSON lines, SQuAD JSON, a question against a long document), evaluate, plain HF models."""

import json
import random
from pathlib import Path

import pytest
from helpers.fixture_cache import OUTPUT, built
from helpers.tiny import qa_paragraph, write_squad

pytestmark = pytest.mark.slow  # every test here trains a model


@pytest.fixture(scope="module")
def squad_files():
    def build(folder):
        write_squad(folder / "train.json", 400, seed=1, long_every=12)
        write_squad(folder / "dev.json", 40, seed=2, long_every=5)
        write_squad(folder / "train2.json", 400, seed=3, version_2=True)
        write_squad(folder / "dev2.json", 40, seed=4, version_2=True)

    folder = built("qa-e2e-data", "v1 400 seed 1 long 12, 40 seed 2 long 5; v2 400 seed 3, 40 seed 4", build)
    return {name: folder / f"{name}.json" for name in ("train", "dev", "train2", "dev2")}


def _config(tmp_path, model, train, dev, name="qa") -> str:
    path = tmp_path / f"{name}.yaml"
    path.write_text(
        f"""task: qa
model: {{name: {model}, max_length: 64}}
data: {{train: {train}, validation: {dev}}}
qa: {{doc_stride: 16, max_question_length: 16}}
train: {{epochs: 4, batch_size: 16, learning_rate: 1.0e-3, warmup_ratio: 0.1, logging_steps: 10}}
output_dir: {tmp_path / name}
"""
    )
    return str(path)


@pytest.fixture(scope="module")
def qa_bundle(trained_bundle, tmp_path_factory, tiny_model, squad_files):
    """`_config(...)` on the v1 files, trained once (tests/conftest.py)."""
    folder = tmp_path_factory.mktemp("qa-run")
    text = Path(_config(folder, tiny_model, squad_files["train"], squad_files["dev"])).read_text()
    return trained_bundle("qa-e2e", "qa", text.replace(str(folder / "qa"), OUTPUT))


def test_train_v1_learns_and_writes_a_bundle(qa_bundle):
    info = json.loads((qa_bundle / "bertkit.json").read_text())
    assert info["task"] == "qa" and info["version_2"] is False
    scores = info["metrics"]["validation"]
    # 'which place ?' / 'which person ?' over contexts of up to ~130 words in 64-token windows
    assert scores["f1"] > 70 and scores["exact_match"] > 60, scores
    assert "has_ans_f1" not in scores
    for name in ("model.safetensors", "tokenizer.json", "metrics.json", "README.md", "training_curves.png"):
        assert (qa_bundle / name).exists(), name
    assert "question-answering" in (qa_bundle / "README.md").read_text()


def test_predict_jsonl_long_document_and_squad_file(qa_bundle, squad_files, tmp_path, cli):
    rng = random.Random(7)
    records = []
    for i in range(6):
        context, place, person = qa_paragraph(rng, 8, True)
        records.append({"id": f"r{i}", "question": "which place ?", "context": context, "gold": place})
    source = tmp_path / "in.jsonl"
    source.write_text("\n".join(json.dumps(r) for r in records))
    out = tmp_path / "out.jsonl"
    code, _, err = cli("predict", "-m", qa_bundle, "-i", source, "-o", out, "--n-best", "3")
    assert code == 0, err
    results = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["id"] for r in results] == [r["id"] for r in records]
    for record, result in zip(records, results, strict=True):
        assert record["context"][result["start"] : result["end"]] == result["answer"]
        assert 0 < result["score"] <= 1 and len(result["alternatives"]) == 3
    assert sum(r["answer"] == rec["gold"] for r, rec in zip(results, records, strict=True)) >= 5

    # a document ~20 windows long: the one place in it is found wherever it sits
    words = [rng.choice(["met", "saw", "the", "film", "with"]) for _ in range(400)]
    words.insert(310, "kyoto")
    doc = tmp_path / "doc.txt"
    doc.write_text(" ".join(words))
    code, stdout, err = cli("predict", "-m", qa_bundle, "--question", "which place ?", "--context-file", doc)
    assert code == 0, err
    answer = json.loads(stdout.strip().splitlines()[-1])
    assert answer["answer"] == "kyoto" and doc.read_text()[answer["start"] : answer["end"]] == "kyoto"

    # SQuAD JSON in -> the {id: answer} file the official evaluation script reads
    target = tmp_path / "predictions.json"
    code, _, err = cli("predict", "-m", qa_bundle, "-i", squad_files["dev"], "-o", target)
    assert code == 0, err
    predictions = json.loads(target.read_text())
    dev_ids = [q["id"] for p in json.loads(squad_files["dev"].read_text())["data"][0]["paragraphs"] for q in p["qas"]]
    assert sorted(predictions) == sorted(dev_ids) and all(isinstance(v, str) for v in predictions.values())


def test_evaluate_and_bad_predict_input(qa_bundle, squad_files, tmp_path, cli):
    target = tmp_path / "eval"
    code, _, err = cli("evaluate", "-m", qa_bundle, "-d", squad_files["dev"], "-o", target)
    assert code == 0, err
    scores = json.loads((target / "metrics.json").read_text())
    trained = json.loads((qa_bundle / "metrics.json").read_text())["validation"]
    assert scores["f1"] == pytest.approx(trained["f1"], abs=1e-6)

    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps({"id": "1", "question": "which place ?", "context": ""}) + "\n")
    out = tmp_path / "never.jsonl"
    code, _, err = cli("predict", "-m", qa_bundle, "-i", bad, "-o", out)
    assert code == 2 and f"{bad}:1: the context is empty" in " ".join(err.split())
    assert not out.exists()
    code, _, err = cli("predict", "-m", qa_bundle, "--question", "where?")
    assert code == 2 and "--context-file go together" in err


def test_train_v2_reports_has_and_no_answer_scores(tmp_path, tiny_model, squad_files):
    from bertkit.config import load_config
    from bertkit.training import train

    cfg = load_config(_config(tmp_path, tiny_model, squad_files["train2"], squad_files["dev2"], "qa2"))
    bundle, _ = train(cfg)
    info = json.loads((bundle / "bertkit.json").read_text())
    scores = info["metrics"]["validation"]
    assert info["version_2"] is True
    assert scores["has_ans_total"] > 0 and scores["no_ans_total"] > 0
    # abstaining on everything would score no_ans_total / total; the model must beat that
    assert scores["f1"] > 100 * scores["no_ans_total"] / scores["total"] + 10, scores
    assert scores["best_f1"] >= scores["f1"] - 1e-9 and "best_f1_threshold" in scores


def test_plain_hf_qa_model(qa_bundle, tmp_path, cli):
    from transformers import AutoModelForQuestionAnswering, AutoTokenizer

    plain = tmp_path / "plain"
    AutoModelForQuestionAnswering.from_pretrained(qa_bundle).save_pretrained(plain)
    AutoTokenizer.from_pretrained(qa_bundle).save_pretrained(plain)
    source = tmp_path / "q.jsonl"
    source.write_text(json.dumps({"question": "which place ?", "context": "the film met lima with the"}) + "\n")
    code, stdout, err = cli("predict", "-m", plain, "-i", source)
    assert code == 0, err
    assert json.loads(stdout.strip().splitlines()[-1])["answer"] == "lima"
    # the card shows how to load the bundle without bertkit (transformers 5 has no QA pipeline)
    assert "AutoModelForQuestionAnswering.from_pretrained" in (qa_bundle / "README.md").read_text()

"""Few-shot classification end to end on a tiny random BERT built in the test: `classify.strategy`
auto takes the contrastive route on a few examples a label, and the bundle it writes is an ordinary
classify bundle (predict, evaluate, ONNX export and predict with the ONNX model)."""

import csv
import io
import json
import random

import pytest
from helpers.tiny import FILLER, NEGATIVE, POSITIVE

pytestmark = pytest.mark.slow


def few_shot_text(rng: random.Random, words: list[str]) -> str:
    """Three of the label's words among three filler words: a random tiny BERT's vectors already
    tell the labels apart a little, which the pairs' tuning and the head build on."""
    text = rng.choices(words, k=3) + rng.choices(FILLER, k=3)
    rng.shuffle(text)
    return " ".join(text)


def write_few(path, n: int, seed: int):
    rng = random.Random(seed)
    with open(path, "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["text", "label"])
        for i in range(n):
            label = "positive" if i % 2 == 0 else "negative"
            writer.writerow([few_shot_text(rng, POSITIVE if label == "positive" else NEGATIVE), label])
    return path


def config(tmp_path, model, train, test, extra=""):
    path = tmp_path / "run.yaml"
    path.write_text(
        "task: classify\n"
        f"model:\n  name: {model}\n  max_length: 32\n"
        f"data:\n  train: {train}\n  validation: {train}\n  test: {test}\n"
        "train:\n  batch_size: 16\n  seed: 3\n"
        "classify:\n  strategy: auto\n  contrastive_learning_rate: 1.0e-3\n  pair_rounds: 10\n"
        f"output_dir: {tmp_path / 'model'}\n" + extra
    )
    return path


@pytest.fixture(scope="module")
def few_shot(tmp_path_factory, tiny_model):
    from bertkit.cli import main
    from bertkit.core.progress import console

    tmp_path = tmp_path_factory.mktemp("fewshot")
    train = write_few(tmp_path / "train.csv", 32, seed=1)  # 16 a label: auto takes the contrastive route
    test = write_few(tmp_path / "test.csv", 60, seed=2)
    said = io.StringIO()
    console.file = said  # what the run says, kept for a test below
    try:
        main(["train", "classify", "-c", str(config(tmp_path, tiny_model, train, test))])
    except SystemExit as stop:
        assert stop.code in (0, None)
    finally:
        console.file = None  # back to whatever sys.stderr is at each print
    (tmp_path / "said.txt").write_text(said.getvalue())
    return tmp_path / "model", test


def test_the_run_says_the_routes_own_settings_not_fine_tunings(few_shot):
    said = " ".join((few_shot[0].parent / "said.txt").read_text().split())
    assert "classify strategy: contrastive (auto: 32 examples for 2 labels" in said, said
    assert "contrastive tuning: 640 pairs, 40 steps, learning rate 0.001" in said, said
    assert "tuning on pairs" in said, said  # the progress bar
    # the fine-tuning learning rate is not used on this route, so it is not said
    assert "(auto: ×" not in said, said


def test_auto_took_the_contrastive_route_and_learnt(few_shot):
    bundle, _ = few_shot
    info = json.loads((bundle / "bertkit.json").read_text())
    assert info["strategy"] == "contrastive"
    tuned = info["training"]["contrastive"]
    assert tuned["pairs"] == 2 * 10 * 32 and tuned["steps"] == 40
    assert tuned["pair_loss_last"] < tuned["pair_loss_first"]
    assert info["metrics"]["test"]["accuracy"] >= 0.9
    hf = json.loads((bundle / "config.json").read_text())
    assert hf["architectures"] == ["BertForSequenceClassification"]  # an ordinary model, no custom code
    assert hf["bertkit_pooling"] == "mean" and tuned["pooling"] == "mean"  # its head reads the tokens' mean


def test_the_model_cards_python_runs_and_agrees_with_predict(few_shot, tmp_path, cli):
    bundle, _ = few_shot
    card = (bundle / "README.md").read_text(encoding="utf-8")
    assert "The contrastive few-shot route" in card and "epochs" not in card.split("## Training")[1].split("##")[0]
    snippet = card.split("```python\n")[1].split("```")[0]
    scope: dict = {}
    exec(snippet, scope)  # the card's own lines, as a user would paste them
    source = tmp_path / "one.txt"
    source.write_text("a text\n")
    code, out, err = cli("predict", "-m", bundle, "-i", source)
    assert code == 0, err
    predicted = json.loads(out.splitlines()[0])
    assert abs(float(scope["scores"][0].max()) - predicted["score"]) < 1e-4
    assert not scope["scores"].requires_grad  # scored without building a graph, as inference should


def test_explain_and_int8_export_read_it_as_any_bundle(few_shot, tmp_path, cli):
    pytest.importorskip("onnxruntime")
    bundle, test = few_shot
    code, out, err = cli("explain", "-m", bundle, "-t", "a wonderful superb film", "--json", "-")
    assert code == 0, err
    explained = json.loads(out)
    assert explained["predicted"] == "positive"
    assert abs(explained["completeness_error"]) < 1e-3  # integrated gradients through the mean-pooled head
    words = {w["text"]: a for w, a in zip(explained["words"], explained["word_attributions"], strict=True)}
    assert words["wonderful"] > 0 and words["superb"] > 0  # the label's words push towards it
    code, _, err = cli("export", "-m", bundle, "-o", tmp_path / "int8", "--quantize", "int8", "--check-data", test)
    assert code == 0, err
    code, out, err = cli("predict", "-m", tmp_path / "int8", "-i", test, "--runtime", "onnx")
    assert code == 0, err
    found = [json.loads(line) for line in out.splitlines()]
    gold = [r["label"] for r in csv.DictReader(test.open(encoding="utf-8"))]
    assert sum(f["predicted_label"] == g for f, g in zip(found, gold, strict=True)) >= 0.85 * len(gold)


def test_predict_evaluate_and_onnx_read_it_as_any_bundle(few_shot, tmp_path, cli):
    pytest.importorskip("onnxruntime")
    bundle, test = few_shot
    code, out, err = cli("evaluate", "-m", bundle, "-d", test)
    assert code == 0, err
    info = json.loads((bundle / "bertkit.json").read_text())
    # texts of the kind it learnt (held out, made like the training data), with their gold labels
    rows = list(csv.DictReader(test.open(encoding="utf-8")))[:20]
    gold = [r["label"] for r in rows]
    source = tmp_path / "in.txt"
    source.write_text("".join(r["text"] + "\n" for r in rows))
    code, _, err = cli("predict", "-m", bundle, "-i", source, "-o", tmp_path / "torch.jsonl")
    assert code == 0, err
    torch_rows = [json.loads(line) for line in (tmp_path / "torch.jsonl").read_text().splitlines()]
    labels = [r["label"] for r in torch_rows]
    assert sum(a == b for a, b in zip(labels, gold, strict=True)) >= 16, (labels, gold)
    onnx = tmp_path / "onnx"
    code, _, err = cli("export", "-m", bundle, "-o", onnx)
    assert code == 0, err
    code, _, err = cli("predict", "-m", onnx, "-i", source, "-o", tmp_path / "onnx.jsonl", "--runtime", "onnx")
    assert code == 0, err
    onnx_rows = [json.loads(line) for line in (tmp_path / "onnx.jsonl").read_text().splitlines()]
    assert [r["label"] for r in onnx_rows] == labels
    for a, b in zip(torch_rows, onnx_rows, strict=True):
        assert abs(a["score"] - b["score"]) < 1e-3
    assert info["metrics"]["test"]["accuracy"] >= 0.9


def multi_label_rows(n: int, seed: int) -> list[dict]:
    """praise (its words) or blame (its words), and every fifth example both (two of each), among
    filler words."""
    rng = random.Random(seed)
    rows = []
    for i in range(n):
        tags = [["praise"], ["blame"], ["praise"], ["blame"], ["blame", "praise"]][i % 5]
        if len(tags) == 2:
            words = rng.choices(POSITIVE, k=2) + rng.choices(NEGATIVE, k=2) + rng.choices(FILLER, k=2)
            rng.shuffle(words)
            text = " ".join(words)
        else:
            text = few_shot_text(rng, POSITIVE if tags == ["praise"] else NEGATIVE)
        rows.append({"text": text, "label": tags})
    return rows


def test_multi_label_takes_one_logistic_head_a_label(tiny_model, tmp_path, cli):
    train, test = tmp_path / "train.jsonl", tmp_path / "test.jsonl"
    train.write_text("".join(json.dumps(r) + "\n" for r in multi_label_rows(50, seed=4)))
    test.write_text("".join(json.dumps(r) + "\n" for r in multi_label_rows(30, seed=5)))
    code, _, err = cli("train", "classify", "-c", config(tmp_path, tiny_model, train, test))
    assert code == 0, err
    info = json.loads((tmp_path / "model" / "bertkit.json").read_text())
    assert info["problem_type"] == "multi_label" and info["strategy"] == "contrastive"
    assert info["training"]["contrastive"]["head"] == "logistic regression, one-vs-rest"
    tuned = info["training"]["contrastive"]
    assert tuned["pairs"] > 0 and tuned["pair_loss_last"] < tuned["pair_loss_first"]
    # the tiny random model tells praise from blame too little for a useful multi-label score here
    # (its f1_micro stayed at saying both labels); the heads' arithmetic is checked in
    # test_classify_fewshot.py on vectors that do separate
    assert "f1_micro" in info["metrics"]["test"]
    code, out, err = cli("predict", "-m", tmp_path / "model", "-i", test)
    assert code == 0, err
    found = [json.loads(line)["labels"] for line in out.splitlines()]
    assert len(found) == 30 and all(set(f) <= {"blame", "praise"} for f in found)


def test_pairs_of_texts_are_refused_before_training(tiny_model, tmp_path, cli):
    data = tmp_path / "pairs.csv"
    data.write_text("premise,hypothesis,label\n" + "great film,good,yes\nawful film,good,no\n" * 4)
    path = config(tmp_path, tiny_model, data, data, extra="")
    sets = ["--set", "data.text_column=premise", "--set", "data.text_pair_column=hypothesis"]
    code, _, err = cli("train", "classify", "-c", path, *sets, "--set", "classify.strategy=contrastive")
    assert code == 2 and "contrastive works on single texts" in " ".join(err.split())
    assert not (tmp_path / "model").exists()


def test_serve_and_compare_read_it_as_any_bundle(few_shot, tmp_path, cli):
    pytest.importorskip("fastapi")
    pytest.importorskip("httpx")
    from fastapi.testclient import TestClient

    from bertkit.serving.app import build_app
    from bertkit.serving.predictor import Limits, Predictor

    bundle, test = few_shot
    texts = [r["text"] for r in csv.DictReader(test.open(encoding="utf-8"))][:6]
    source = tmp_path / "in.txt"
    source.write_text("".join(t + "\n" for t in texts))
    code, out, err = cli("predict", "-m", bundle, "-i", source)
    assert code == 0, err
    offline = [json.loads(line) for line in out.splitlines()]
    with TestClient(build_app(Predictor(str(bundle)), max_batch=4, max_wait_ms=5, limits=Limits(8, 400))) as client:
        served = client.post("/predict", json={"texts": texts}).json()["results"]
    assert [r["label"] for r in served] == [r["label"] for r in offline]
    assert all(abs(a["score"] - b["score"]) < 1e-5 for a, b in zip(served, offline, strict=True))
    import shutil

    twin = shutil.copytree(bundle, tmp_path / "twin")  # the same model under another name
    code, out, err = cli("compare", bundle, twin, "-d", test, "--baseline", "tfidf", "-o", tmp_path / "compared")
    assert code == 0, err
    assert "the two cannot be told apart" in " ".join(out.split())  # one model twice: the same answers


def test_a_frozen_encoder_gets_its_head_fitted_and_a_broken_one_is_named(tiny_model, tmp_path, cli):
    """Every encoder layer frozen: the pair loss had nothing to move and the run ended in a raw
    traceback; the head is now fitted on the untuned vectors, and that is said. A learning rate that
    breaks the weights on the last step gave scikit-learn NaN vectors (a traceback): now exit 2."""
    train = write_few(tmp_path / "train.csv", 16, seed=1)
    path = config(tmp_path, tiny_model, train, train)
    frozen = ["--set", "train.freeze_embeddings=true", "--set", "train.freeze_layers=2"]
    code, _, err = cli("train", "classify", "-c", path, *frozen)
    assert code == 0, err
    assert "contrastive tuning: skipped, the encoder is frozen" in " ".join(err.split())
    tuned = json.loads((tmp_path / "model" / "bertkit.json").read_text())["training"]["contrastive"]
    assert tuned["frozen"] and tuned["steps"] == 0
    assert "no tuning (the encoder was frozen)" in (tmp_path / "model" / "README.md").read_text()
    # tune on it searched the contrastive keys, each trial the same model: refused before any trial
    code, _, err = cli("tune", "-c", path, *frozen, "--trials", "2", "--output-dir", tmp_path / "study")
    said = " ".join(err.split())
    assert code == 2 and "with the whole encoder frozen" in said and "classify.pair_rounds" in said, err
    assert not (tmp_path / "study").exists()
    broken = ["--set", "classify.contrastive_learning_rate=1e6", "--set", "train.max_steps=1"]
    code, _, err = cli("train", "classify", "-c", path, *broken, "--output-dir", tmp_path / "broken")
    assert code == 2 and "lower classify.contrastive_learning_rate" in " ".join(err.split()), err
    assert not (tmp_path / "broken").exists()
    overflowing = ["--set", "classify.contrastive_learning_rate=1e38", "--set", "train.max_steps=1"]
    code, _, err = cli("train", "classify", "-c", path, *overflowing, "--output-dir", tmp_path / "broken")
    assert code == 2 and "lower classify.contrastive_learning_rate" in " ".join(err.split()), err
    # early stopping belongs to fine-tuning: warned about as unused, never a reason to stop the run
    patience = ["--set", "train.early_stopping_patience=2", "--set", "train.eval_strategy=no"]
    code, _, err = cli("train", "classify", "-c", path, *patience, "--output-dir", tmp_path / "patient")
    assert code == 0 and "does not use train.early_stopping_patience" in " ".join(err.split()), err


def test_info_says_the_bundle_was_made_by_the_contrastive_route(few_shot, cli):
    code, out, err = cli("info", "--model", few_shot[0])
    assert code == 0, err
    said = " ".join(out.split())
    assert "contrastive few-shot (640 pairs; logistic regression head on the mean-pooled sentence vector)" in said, said

"""Calibrated scores (bertkit/tasks/classify/calibration.py, bertkit/core/metrics/calibration.py):
ECE and the Brier score of known scores, a temperature recovered from scores made over-confident
on purpose, and a trained bundle whose scores are the same calibrated numbers in predict,
evaluate, an ONNX export and the metrics training wrote."""

import json

import numpy as np
import pytest

from bertkit.core import metrics
from bertkit.core.inference import softmax
from bertkit.tasks.classify import calibration


def test_ece_and_brier_of_known_scores():
    module = metrics.load("calibration")
    # ten examples at 0.9 of which nine are right: calibrated; at 0.9 with six right: off by 0.3
    right = [[0.1, 0.9]] * 10
    found = module.compute(probabilities=right, references=[1] * 9 + [0])
    assert found["ece"] == pytest.approx(0.0, abs=1e-9)
    assert found["brier"] == pytest.approx((9 * 2 * 0.01 + (0.81 + 0.81)) / 10)
    found = module.compute(probabilities=right, references=[1] * 6 + [0] * 4)
    assert found["ece"] == pytest.approx(0.3)
    # two bins: 0.55 (right half the time) and 1.0 (always right)
    found = module.compute(probabilities=[[0.45, 0.55]] * 4 + [[0.0, 1.0]] * 4, references=[1, 1, 0, 0, 1, 1, 1, 1])
    assert found["ece"] == pytest.approx(0.5 * 0.05)
    assert found["reliability"]["count"] == [4, 4] and found["reliability"]["accuracy"] == [0.5, 1.0]


def _overconfident(n: int, k: int, temperature: float, seed: int = 0):
    """Logits whose softmax is the true chance of each class, times `temperature`, and labels
    drawn from those chances: the temperature that calibrates them is `temperature`."""
    rng = np.random.default_rng(seed)
    true_logits = rng.normal(0, 1.5, size=(n, k))
    chances = softmax(true_logits)
    labels = np.array([rng.choice(k, p=p) for p in chances])
    return true_logits * temperature, labels


def test_the_fitted_temperature_is_the_one_that_made_the_scores_overconfident():
    logits, labels = _overconfident(4000, 3, 2.5)
    info = {"problem_type": "single_label", "labels": ["a", "b", "c"]}
    found = calibration.fit(logits, labels, info)
    assert found["temperatures"] == [found["temperatures"][0]] * 3
    assert found["temperatures"][0] == pytest.approx(2.5, rel=0.08)
    module = metrics.load("calibration")
    before = module.compute(probabilities=calibration.probabilities(logits, info), references=labels)["ece"]
    after = module.compute(probabilities=calibration.probabilities(logits, {**info, "calibration": found}),
                           references=labels)["ece"]  # fmt: skip
    assert before > 0.08 and after < 0.03
    # the predicted class never changes
    raw = calibration.probabilities(logits, info)
    scaled = calibration.probabilities(logits, {**info, "calibration": found})
    assert (raw.argmax(1) == scaled.argmax(1)).all()


def test_multi_label_gets_a_temperature_per_label_and_keeps_its_labels_at_one_half():
    rng = np.random.default_rng(1)
    true = rng.normal(0, 2, size=(3000, 2))
    gold = (rng.random((3000, 2)) < 1 / (1 + np.exp(-true))).astype(int)
    logits = true * np.array([3.0, 0.5])  # the first label over-confident, the second timid
    info = {"problem_type": "multi_label", "labels": ["x", "y"], "threshold": 0.5}
    found = calibration.fit(logits, gold, info)
    assert found["temperatures"][0] == pytest.approx(3.0, rel=0.1)
    assert found["temperatures"][1] == pytest.approx(0.5, rel=0.1)
    scaled = calibration.probabilities(logits, {**info, "calibration": found})
    assert ((scaled > 0.5) == (logits > 0)).all()
    assert calibration.fit(logits[:, :1], gold[:, :1], {"problem_type": "regression"}) is None


def test_validation_data_that_cannot_place_a_temperature_leaves_the_scores_as_they_are():
    rng = np.random.default_rng(2)
    logits = rng.normal(0, 2, size=(200, 2))
    single = {"problem_type": "single_label", "labels": ["neg", "pos"]}
    found = calibration.fit(logits, np.ones(200, dtype=int), single)  # one label only
    assert found["method"] == "none" and "all have one label (pos)" in found["why"]
    # a model right on every validation example, however sure: the temperature would go to 0
    labels = np.arange(200) % 2
    margin = np.abs(logits[:, 0]) + 0.1
    right = np.stack([np.where(labels == 0, margin, -margin), np.where(labels == 1, margin, -margin)], axis=1)
    found = calibration.fit(right, labels, single)
    assert found["method"] == "none" and "bound" in found["why"]
    # multi-label: a label no validation example has keeps temperature 1, the others are fitted
    gold = np.stack([(logits[:, 0] + rng.normal(0, 2, 200) > 0), np.zeros(200)], axis=1).astype(int)
    found = calibration.fit(logits * 3, gold, {"problem_type": "multi_label", "labels": ["x", "y"]})
    assert found["temperatures"][1] == 1.0 and found["left_as_is"] == {"y": "no validation example has it"}
    assert 1.5 < found["temperatures"][0] < 20


def test_a_confidence_map_joins_the_temperature_only_where_it_calibrates_better_on_held_out_halves():
    rng = np.random.default_rng(4)
    n = 2000
    margin = rng.gamma(2.0, 1.5, n)  # how far the top logit leads
    # the chance of being right is not a temperature's shape of the margin: 0.55 below 2, 0.97 above
    right = rng.random(n) < np.where(margin < 2, 0.55, 0.97)
    top = rng.integers(0, 3, n)
    gold = np.where(right, top, (top + rng.integers(1, 3, n)) % 3)
    logits = rng.normal(0, 0.3, (n, 3))
    logits[np.arange(n), top] += margin
    info = {"problem_type": "single_label", "labels": ["a", "b", "c"]}
    found = calibration.fit(logits, gold, info)
    assert found["method"] == "temperature+isotonic" and found["confidence_map"]["x"]
    tempered = {**info, "calibration": {**found, "confidence_map": None}}
    scores = calibration.probabilities(logits, {**info, "calibration": found})
    assert (scores.argmax(1) == logits.argmax(1)).all() and np.allclose(scores.sum(1), 1)
    module = metrics.load("calibration")
    ece = module.compute(probabilities=scores, references=gold)["ece"]
    assert ece < module.compute(probabilities=calibration.probabilities(logits, tempered), references=gold)["ece"]
    assert ece < 0.03
    # a model whose miscalibration is a temperature's keeps the temperature alone
    over, labels = _overconfident(2000, 3, 2.5, seed=5)
    assert calibration.fit(over, labels, info)["method"] == "temperature"
    # fewer than ISOTONIC_MIN examples: no map, however it would fit
    assert calibration.fit(logits[:150], gold[:150], info)["method"] == "temperature"


def test_the_mapped_top_score_stays_the_top():
    scores = np.array([[0.5, 0.3, 0.2], [0.34, 0.33, 0.33], [0.9, 0.1, 0.0], [0.0, 1.0, 0.0]])
    mapped = calibration.mapped_scores(scores, {"x": [0.0, 1.0], "y": [0.0, 0.0]})  # a map that says "never right"
    assert (mapped.argmax(1) == scores.argmax(1)).all() and np.allclose(mapped.sum(1), 1)
    # the others keep their proportions
    assert mapped[0, 1] / mapped[0, 2] == pytest.approx(1.5)
    # however sure the model is, the map applies and the row sums to 1 (1 - top would round away the rest)
    info = {"problem_type": "single_label", "labels": ["a", "b", "c"],
            "calibration": {"temperatures": [1, 1, 1], "confidence_map": {"x": [0.34, 1.0], "y": [0.34, 0.9]}}}
    for gap in (30.0, 35.5, 36.2, 38.0, 80.0):
        scores = calibration.probabilities(np.array([[0.0, gap, 1.0], [0.0, gap, -3.0]]), info)
        assert scores.sum(1) == pytest.approx([1.0, 1.0], abs=1e-9) and scores[:, 1] == pytest.approx([0.9, 0.9])
    assert calibration.check({"temperatures": [1, 1], "confidence_map": {"x": [0.3, 1.0], "y": [0.9, 0.3]}}, 2)


# ---------------------------------------------------------------- a trained bundle, end to end


@pytest.mark.slow
def test_a_trained_bundle_gives_the_same_calibrated_scores_everywhere(learned_classify_bundle, easy_data, cli,
                                                                      tmp_path):  # fmt: skip
    import torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    bundle = learned_classify_bundle
    info = json.loads((bundle / "bertkit.json").read_text())
    found = info["calibration"]
    assert found["method"] == "temperature" and found["fitted_on"] == "validation" and found["examples"] >= 20
    t = found["temperatures"][0]
    assert t != 1.0
    saved = json.loads((bundle / "metrics.json").read_text())
    for role in ("validation", "test"):
        assert {"ece", "brier", "ece_uncalibrated", "brier_uncalibrated"} <= set(saved[role])
    assert saved["validation"]["ece"] <= saved["validation"]["ece_uncalibrated"] + 1e-9  # fitted there
    assert (bundle / "reliability.png").stat().st_size > 1000
    assert f"logits = logits / {t}" in (bundle / "README.md").read_text()
    code, out, err = cli("info", "--model", bundle)
    assert code == 0 and f"temperature {t:.3g}, fitted on {found['examples']} validation" in out, err

    texts = ["a great film and lovely staff", "the plot was boring", "great awful the was"]
    source = tmp_path / "in.txt"
    source.write_text("\n".join(texts) + "\n")
    code, out, err = cli("predict", "-m", bundle, "-i", source)
    assert code == 0, err
    predicted = [json.loads(line) for line in out.splitlines()]
    tokenizer = AutoTokenizer.from_pretrained(bundle)
    model = AutoModelForSequenceClassification.from_pretrained(bundle).eval()
    with torch.no_grad():
        logits = model(**tokenizer(texts, return_tensors="pt", padding=True)).logits.numpy()
    expected = softmax(logits / t)
    for row, probs in zip(predicted, expected, strict=True):
        assert [row["scores"][name] for name in info["labels"]] == pytest.approx(probs.tolist(), abs=1e-5)

    # evaluate on the test split gives the ECE training wrote for it: one reading of the number
    code, _, err = cli("evaluate", "-m", bundle, "-d", easy_data["test"], "-o", tmp_path / "scored")
    assert code == 0, err
    scored = json.loads((tmp_path / "scored" / "metrics.json").read_text())
    for key in ("ece", "ece_uncalibrated", "brier", "accuracy"):
        assert scored[key] == pytest.approx(saved["test"][key], abs=1e-6)
    assert (tmp_path / "scored" / "reliability.png").is_file()

    pytest.importorskip("onnxruntime")
    code, _, err = cli("export", "-m", bundle, "--format", "onnx", "-o", tmp_path / "onnx")
    assert code == 0, err
    assert json.loads((tmp_path / "onnx" / "bertkit.json").read_text())["calibration"] == found
    code, out, err = cli("predict", "-m", tmp_path / "onnx", "-i", source)
    assert code == 0, err
    for row, want in zip((json.loads(line) for line in out.splitlines()), predicted, strict=True):
        assert row["label"] == want["label"] and row["score"] == pytest.approx(want["score"], abs=1e-4)


@pytest.mark.slow
def test_multi_label_none_and_too_few_validation_examples(
    tiny_model, multi_label_data, multi_label_bundle, tmp_path, cli
):
    folder = tmp_path
    base = (f"task: classify\nmodel:\n  name: {tiny_model}\n  max_length: 16\ndata:\n  train: {multi_label_data}\n"
            "train:\n  epochs: 2\n  learning_rate: 3.0e-3\n")  # fmt: skip
    info = json.loads((multi_label_bundle / "bertkit.json").read_text())
    assert info["problem_type"] == "multi_label" and len(info["calibration"]["temperatures"]) == 2
    assert {"ece", "ece_uncalibrated"} <= set(info["metrics"]["validation"])

    code, out, err = cli("train", "classify", "-c", _write(folder, base), "--set", "data.validation_split=0.05",
                         "--set", f"output_dir={folder / 'few'}")  # fmt: skip
    assert code == 0, err
    info = json.loads((folder / "few" / "bertkit.json").read_text())
    assert info["calibration"]["method"] == "none" and "fewer than the 20" in info["calibration"]["why"]
    assert "ece_uncalibrated" not in info["metrics"]["validation"] and "ece" in info["metrics"]["validation"]
    assert "left uncalibrated" in out + err
    code, out, err = cli("info", "--model", folder / "few")
    assert code == 0 and "calibration" in out and "fewer than the 20" in out, err

    code, _, err = cli("train", "classify", "-c", _write(folder, base), "--set", "classify.calibration=none",
                       "--set", f"output_dir={folder / 'none'}")  # fmt: skip
    assert code == 0, err
    info = json.loads((folder / "none" / "bertkit.json").read_text())
    assert "calibration" not in info and "ece_uncalibrated" not in info["metrics"]["validation"]
    assert (folder / "none" / "reliability.png").is_file()  # the scores as they are, still drawn


def _write(folder, text: str):
    path = folder / "run.yaml"
    path.write_text(text)
    return path

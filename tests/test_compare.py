"""`bertkit compare`: the statistics against hand-computed cases, the per-example results of each
task against their own metric modules, and the command end to end on tiny models (its numbers
equal `bertkit evaluate`'s, the files and their shapes, exit codes on bad input)."""

from __future__ import annotations

import csv
import json
import random
import shutil

import numpy as np
import pytest

from bertkit.comparison.bootstrap import bootstrap_p, interval, mcnemar, pair_tests, resample_all, weights

# ---------------------------------------------------------------- the statistics


def test_resamples_draw_n_examples_each_and_repeat_with_the_seed():
    chunks = list(weights(50, 300, seed=3))
    drawn = np.vstack(chunks)
    assert drawn.shape == (300, 50)
    assert (drawn.sum(axis=1) == 50).all()  # each round draws n examples, with replacement
    assert drawn.max() > 1  # some drawn twice
    again = np.vstack(list(weights(50, 300, seed=3)))
    assert (drawn == again).all()
    assert not (drawn == np.vstack(list(weights(50, 300, seed=4)))).all()


def test_resamples_come_in_chunks_for_large_data(monkeypatch):
    from bertkit.comparison import bootstrap

    monkeypatch.setattr(bootstrap, "CELLS_PER_CHUNK", 1000)
    chunks = list(weights(300, 10, seed=0))
    assert [len(c) for c in chunks] == [3, 3, 3, 1]
    assert all((c.sum(axis=1) == 300).all() for c in chunks)


def test_mcnemar_is_the_exact_binomial_test_on_discordant_pairs():
    from scipy.stats import binomtest

    # 10 examples only A got right, 2 only B got right, 20 both, 5 neither
    a = np.array([1] * 10 + [0] * 2 + [1] * 20 + [0] * 5)
    b = np.array([0] * 10 + [1] * 2 + [1] * 20 + [0] * 5)
    p, only_a, only_b = mcnemar(a, b)
    assert (only_a, only_b) == (10, 2)
    # by hand: 2 * P(X <= 2), X ~ Binomial(12, 1/2) = 2 * (1 + 12 + 66) / 4096
    assert p == pytest.approx(2 * 79 / 4096)
    assert p == pytest.approx(binomtest(10, 12, 0.5).pvalue)
    assert mcnemar(a, a) == (1.0, 0, 0)  # no discordant pair: no evidence of a difference


def test_bootstrap_p_value_counts_rounds_of_the_other_sign():
    rounds = np.array([0.02] * 90 + [-0.01] * 8 + [0.0] * 2)
    assert bootstrap_p(0.02, rounds) == pytest.approx(0.2)  # 2 * 10 / 100
    assert bootstrap_p(-0.02, -rounds) == pytest.approx(0.2)
    assert bootstrap_p(0.0, rounds) == 1.0
    assert bootstrap_p(0.5, np.array([-1.0] * 10)) == 1.0  # capped


def test_interval_is_the_middle_95_percent():
    low, high = interval(np.arange(1001, dtype=float))
    assert (low, high) == (pytest.approx(25.0), pytest.approx(975.0))


def _single(predictions, references, labels=("a", "b", "c")):
    from bertkit.tasks.classify.scored import SingleLabel

    return SingleLabel(np.asarray(predictions), np.asarray(references), list(labels))


def _random_labels(n, k, right, seed):
    rng = np.random.default_rng(seed)
    gold = rng.integers(0, k, n)
    predicted = np.where(rng.random(n) < right, gold, rng.integers(0, k, n))
    return predicted, gold


def test_single_label_resamples_equal_the_metric_module_on_the_same_draw():
    predicted, gold = _random_labels(120, 3, 0.7, seed=0)
    scored = _single(predicted, gold)
    draws = np.vstack(list(weights(120, 5, seed=1)))
    fast = scored.resampled(draws)
    positions = np.arange(120)
    for r, row in enumerate(draws):
        slow = scored.score(np.repeat(positions, row.astype(int)))
        for metric in scored.metrics:
            assert fast[metric][r] == pytest.approx(slow[metric], abs=1e-12), metric
    whole = scored.from_sums(np.ones((1, 120)) @ scored.stats())
    assert {m: pytest.approx(v[0]) for m, v in whole.items()} == {m: scored.score()[m] for m in scored.metrics}


def test_a_class_missing_from_a_resample_scores_as_the_module_scores_it():
    # class "c" is never predicted and appears once: resamples without it must still agree
    scored = _single([0, 1, 0, 1, 0], [0, 1, 1, 1, 2])
    draws = np.array([[2, 1, 1, 1, 0], [0, 0, 0, 5, 0]], dtype=float)
    fast = scored.resampled(draws)
    for r, row in enumerate(draws):
        slow = scored.score(np.repeat(np.arange(5), row.astype(int)))
        assert {m: pytest.approx(fast[m][r]) for m in scored.metrics} == {m: slow[m] for m in scored.metrics}


def _answers(texts):
    return {"text": texts, "answer_start": [0] * len(texts)}


def test_multi_label_ner_qa_and_retrieval_resamples_equal_their_modules():
    from bertkit.tasks.classify.scored import MultiLabel
    from bertkit.tasks.embed.losses import Ranked
    from bertkit.tasks.ner.scored import Tagged
    from bertkit.tasks.ner.tagging import score_tags
    from bertkit.tasks.qa.scored import Answered

    rng = np.random.default_rng(0)
    gold = rng.integers(0, 2, (40, 4))
    multi = MultiLabel(np.where(rng.random((40, 4)) < 0.8, gold, 1 - gold), gold, list("wxyz"))
    tags = ["O", "B-PER", "I-PER", "B-LOC", "I-LOC"]
    truth = [list(rng.choice(tags, 6)) for _ in range(30)]
    guess = [[t if rng.random() < 0.8 else str(rng.choice(tags)) for t in s] for s in truth]
    ner = Tagged(guess, truth, score_tags)
    records = [
        {"id": f"q{i}", "context": "the cat sat on the mat", "answers": _answers(["the cat", "cat"] if i % 4 else [])}
        for i in range(24)
    ]
    found = [{"answer": ["cat", "the mat", "", "cat sat"][i % 4], "null_difference": 0.0, "best_answer": "cat"}
             for i in range(24)]  # fmt: skip
    qa = Answered(found, records, {"qa": {"null_score_diff_threshold": 0.0}, "version_2": True})
    ranked = Ranked(rng.integers(1, 15, 50))
    for scored in (multi, ner, qa, ranked):
        draws = np.vstack(list(weights(len(scored), 4, seed=2)))
        fast = scored.resampled(draws)
        for r, row in enumerate(draws):
            slow = scored.score(np.repeat(np.arange(len(scored)), row.astype(int)))
            for metric in scored.metrics:
                assert fast[metric][r] == pytest.approx(slow[metric], abs=1e-9), (type(scored).__name__, metric)
        whole = scored.score()
        assert {m: pytest.approx(whole[m]) for m in scored.metrics} == {
            m: scored.resampled(np.ones((1, len(scored))))[m][0] for m in scored.metrics
        }


def test_pairs_use_mcnemar_for_accuracy_and_the_bootstrap_for_the_rest():
    predicted, gold = _random_labels(400, 3, 0.9, seed=5)
    worse, _ = _random_labels(400, 3, 0.6, seed=6)
    worse = np.where(np.random.default_rng(7).random(400) < 0.6, gold, worse)
    scored = {"good": _single(predicted, gold), "bad": _single(worse, gold)}
    rounds = resample_all(scored, 500, seed=0)
    points = {n: {m: s.score()[m] for m in s.metrics} for n, s in scored.items()}
    for name, values in rounds.items():  # every interval holds its point estimate
        for metric in scored[name].metrics:
            low, high = interval(values[metric])
            assert low <= points[name][metric] <= high
    pairs = pair_tests(["good", "bad"], scored, points, rounds, ["accuracy", "f1_macro"])
    accuracy, f1 = pairs
    assert accuracy["test"] == "mcnemar" and f1["test"] == "paired bootstrap"
    assert accuracy["difference"] == pytest.approx(points["good"]["accuracy"] - points["bad"]["accuracy"])
    assert accuracy["significant"] and f1["significant"]
    assert accuracy["ci"][0] > 0
    same = pair_tests(["good", "copy"], {**scored, "copy": scored["good"]},
                      {**points, "copy": points["good"]}, {**rounds, "copy": rounds["good"]}, ["accuracy", "f1_macro"])  # fmt: skip
    assert [p["significant"] for p in same] == [False, False]
    assert [p["p_value"] for p in same] == [1.0, 1.0]


def test_a_thousand_rounds_over_ten_thousand_examples_take_seconds():
    import time

    predicted, gold = _random_labels(10_000, 4, 0.85, seed=0)
    start = time.perf_counter()
    rounds = resample_all({"m": _single(predicted, gold, "abcd")}, 1000, seed=0)
    assert time.perf_counter() - start < 30  # about 1 s here
    assert rounds["m"]["accuracy"].shape == (1000,)

"""The demo's reviews (examples/reviews, `make demo`): they parse as training reads them, the three
files share no review, labels are balanced, and the held-out set keeps the variety the demo's
model is measured on (bench/demo_quality.py)."""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

import pytest

from bertkit.core.data.readers import read_records

REVIEWS = Path(__file__).resolve().parents[1] / "examples" / "reviews"
LABELS = {"positive", "negative"}
STYLES = {"plain", "mixed", "negation", "sarcasm", "understatement"}


def labelled(name: str) -> list[dict]:
    return list(read_records(str(REVIEWS / name)))


def predict_lines() -> list[str]:
    return (REVIEWS / "predict.txt").read_text(encoding="utf-8").splitlines()


def normal(text: str) -> str:
    """The review with case, punctuation and spacing gone: a copy that differs only there is a copy."""
    return " ".join(re.findall(r"\w+", text.lower()))


@pytest.mark.parametrize("name", ["train.csv", "test.csv"])
def test_labelled_files_parse_with_text_label_and_style(name):
    rows = labelled(name)
    assert rows and all(set(r) == {"text", "label", "style"} for r in rows)
    assert {r["label"] for r in rows} == LABELS
    assert {r["style"] for r in rows} == STYLES
    words = [len(r["text"].split()) for r in rows]
    assert min(words) >= 2 and max(words) <= 130


def test_predict_file_is_twenty_reviews_with_a_long_and_a_non_ascii_one():
    lines = predict_lines()
    assert len(lines) == 20 and all(line.strip() for line in lines)
    assert sum(len(line.split()) >= 90 for line in lines) >= 2
    assert any(not line.isascii() for line in lines)


def test_no_review_is_in_two_files_or_twice_in_one():
    files = {name: [r["text"] for r in labelled(name)] for name in ("train.csv", "test.csv")}
    files["predict.txt"] = predict_lines()
    for name, texts in files.items():
        repeated = [t for t, n in Counter(map(normal, texts)).items() if n > 1]
        assert not repeated, f"{name} repeats: {repeated[:3]}"
    names = list(files)
    for i, a in enumerate(names):
        for b in names[i + 1 :]:
            shared = {normal(t) for t in files[a]} & {normal(t) for t in files[b]}
            assert not shared, f"{a} and {b} share: {sorted(shared)[:3]}"


@pytest.mark.parametrize("name", ["train.csv", "test.csv"])
def test_labels_are_balanced_overall_and_within_mixed_tone(name):
    rows = labelled(name)
    positive = sum(r["label"] == "positive" for r in rows) / len(rows)
    assert 0.45 <= positive <= 0.55
    mixed = [r for r in rows if r["style"] == "mixed"]
    assert 0.4 <= sum(r["label"] == "positive" for r in mixed) / len(mixed) <= 0.6


def test_held_out_set_is_large_and_as_varied_as_training():
    train, test = labelled("train.csv"), labelled("test.csv")
    assert len(train) >= 1000 and len(test) >= 250
    shares = {n: Counter(r["style"] for r in rows) for n, rows in (("train", train), ("test", test))}
    for style in STYLES:
        a, b = shares["train"][style] / len(train), shares["test"][style] / len(test)
        assert abs(a - b) < 0.03, (style, a, b)
    assert shares["test"]["mixed"] / len(test) >= 0.25
    assert shares["test"]["negation"] + shares["test"]["sarcasm"] >= 40

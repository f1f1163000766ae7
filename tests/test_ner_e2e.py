"""NER end to end through the CLI on a tiny random BERT: CoNLL (IOB1) and span data, long
sentences through windows, every predict input, evaluate, and bad input."""

import json

import pytest
from helpers.fixture_cache import OUTPUT

pytestmark = pytest.mark.slow


def config(tmp_path, model, train, test=None, extra=""):
    path = tmp_path / "ner.yaml"
    test_line = f"  test: {test}\n" if test else ""
    path.write_text(
        "task: ner\n"
        f"model:\n  name: {model}\n  max_length: 32\n"
        f"data:\n  train: {train}\n{test_line}"
        "train:\n  epochs: 5\n  batch_size: 16\n  learning_rate: 3.0e-3\n  warmup_ratio: 0.0\n  seed: 3\n"
        f"output_dir: {tmp_path / 'ner'}\n" + extra
    )
    return path


@pytest.fixture(scope="module")
def trained(trained_bundle, tmp_path_factory, tiny_model, ner_data):
    """`config(...)` with ner_data's train and test files, trained once (tests/conftest.py)."""
    folder = tmp_path_factory.mktemp("ner-e2e")
    text = config(folder, tiny_model, ner_data["train"], ner_data["test"]).read_text()
    return trained_bundle("ner-e2e", "ner", text.replace(str(folder / "ner"), OUTPUT))


def test_conll_iob1_trains_and_learns(trained):
    info = json.loads((trained / "bertkit.json").read_text())
    assert info["task"] == "ner" and info["labels"] == ["O", "B-LOC", "I-LOC", "B-PER", "I-PER"]
    assert info["tag_scheme"]["scheme"] == "IOB1" and info["tag_scheme"]["detected"]  # found, and kept
    metrics = json.loads((trained / "metrics.json").read_text())
    assert metrics["test"]["f1"] > 0.9, metrics["test"]
    assert set(metrics["test"]["per_type"]) == {"LOC", "PER"}
    card = (trained / "README.md").read_text()
    assert "| PER |" in card and "![scores by entity type](per_type_f1.png)" in card
    assert (trained / "per_type_f1.png").is_file() and "confusion_matrix" not in card


def test_predict_text_gives_character_spans(trained, cli, tmp_path):
    source = tmp_path / "in.txt"
    source.write_text("Yesterday Alice Smith flew from Paris to Kyoto.\nNothing to see.\n")
    code, out, err = cli("predict", "-m", trained, "-i", source)
    assert code == 0, err
    first, second = [json.loads(line) for line in out.splitlines()]
    found = {(e["type"], e["text"]) for e in first["entities"]}
    assert found == {("PER", "Alice Smith"), ("LOC", "Paris"), ("LOC", "Kyoto")}
    for entity in first["entities"]:
        assert first["text"][entity["start"] : entity["end"]] == entity["text"] and 0 < entity["score"] <= 1
    assert second["entities"] == []


def test_long_sentences_are_windowed_not_truncated(trained, cli, tmp_path):
    words = ["the"] * 70 + ["hana", "rossi", "left", "oslo"]
    source = tmp_path / "long.jsonl"
    source.write_text(json.dumps({"tokens": words}) + "\n")
    code, out, err = cli("predict", "-m", trained, "-i", source)
    assert code == 0, err
    tags = json.loads(out)["tags"]
    assert len(tags) == len(words)
    assert tags[-4:] == ["B-PER", "I-PER", "O", "B-LOC"]


def test_predict_conll_adds_a_column(trained, cli, ner_data, tmp_path):
    target = tmp_path / "pred.conll"
    code, _, err = cli("predict", "-m", trained, "-i", ner_data["test"], "-o", target)
    assert code == 0, err
    source_rows = [
        line.split() for line in ner_data["test"].read_text().splitlines() if line and not line.startswith("-DOC")
    ]
    rows = [line.split() for line in target.read_text().splitlines() if line]
    assert len(rows) == len(source_rows)
    assert all(r[:-1] == s for r, s in zip(rows, source_rows, strict=True))
    # gold column is IOB1, predictions IOB2: same entities
    assert sum(r[-1] != "O" for r in rows) == sum(s[-1] != "O" for s in source_rows)


def test_evaluate_conll(trained, cli, ner_data, tmp_path):
    code, _, err = cli("evaluate", "-m", trained, "-d", ner_data["test"], "-o", tmp_path / "eval")
    assert code == 0, err
    metrics = json.loads((tmp_path / "eval" / "metrics.json").read_text())
    assert metrics["f1"] > 0.9 and (tmp_path / "eval" / "per_type_f1.png").exists()
    import shutil

    old = tmp_path / "old"  # a bundle from before the scheme was recorded: evaluate detects it, as it did
    shutil.copytree(trained, old)
    info = json.loads((old / "bertkit.json").read_text())
    del info["tag_scheme"]
    (old / "bertkit.json").write_text(json.dumps(info))
    code, _, err = cli("evaluate", "-m", old, "-d", ner_data["test"], "-o", tmp_path / "eval-old")
    assert code == 0, err
    assert json.loads((tmp_path / "eval-old" / "metrics.json").read_text())["f1"] == metrics["f1"]


def test_bundle_loads_in_transformers_pipeline(trained):
    from transformers import pipeline

    tagger = pipeline("token-classification", model=str(trained), aggregation_strategy="first")
    groups = {(e["entity_group"], e["word"]) for e in tagger("bruno met hana rossi in lima")}
    assert ("LOC", "lima") in groups


def test_span_data_and_all_subwords(tiny_model, ner_data, cli, tmp_path):
    path = config(tmp_path, tiny_model, ner_data["spans"], extra="ner:\n  label_all_subwords: true\n")
    code, _, err = cli("train", "ner", "-c", path)
    assert code == 0, err
    metrics = json.loads((tmp_path / "ner" / "metrics.json").read_text())
    assert metrics["validation"]["f1"] > 0.8
    # evaluate scores span data on its characters: the spans as given ...
    code, _, err = cli("evaluate", "-m", tmp_path / "ner", "-d", ner_data["spans"], "-o", tmp_path / "eval")
    assert code == 0, err
    scored = json.loads((tmp_path / "eval" / "metrics.json").read_text())
    assert scored["f1"] > 0.8 and "character_accuracy" in scored and "token_accuracy" not in scored
    # ... so gold spans that stop inside a word are missed by whole-word tags, not widened to them
    # (scored on the widened words, a model that tags the whole word was perfect: F1 1.0)
    cut = tmp_path / "cut.jsonl"
    with open(ner_data["spans"]) as src, open(cut, "w") as out:
        for line in src:
            record = json.loads(line)
            for entity in record["entities"]:
                entity["end"] -= 1  # "riga" -> "rig"
            out.write(json.dumps(record) + "\n")
    code, _, err = cli("evaluate", "-m", tmp_path / "ner", "-d", cut, "-o", tmp_path / "eval-cut")
    assert code == 0, err
    assert "cut through a word; entities are scored on the characters the data gives" in " ".join(err.split())
    assert json.loads((tmp_path / "eval-cut" / "metrics.json").read_text())["f1"] < 0.1


def write(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text)
    return path


@pytest.mark.parametrize(
    "name, text, message",
    [
        ("cols.conll", "alice X I-PER\nleft X X O\n", ":2: expected 3 columns (as on line 1), found 4"),
        (
            "outside.jsonl",
            '{"text": "alice", "entities": [{"start": 0, "end": 9, "type": "PER"}]}\n',
            "lies outside the text",
        ),
        (
            "overlap.jsonl",
            '{"text": "alice smith", "entities": [{"start": 0, "end": 5, "type": "PER"}, '
            '{"start": 3, "end": 11, "type": "PER"}]}\n',
            "entities overlap",
        ),
        ("none.conll", "alice X O\nleft X O\n", "no entities at all"),
        ("empty.jsonl", '{"tokens": [], "tags": []}\n', "empty sentence"),
        ("badtag.conll", "alice X Q-PER\n", "'Q-PER' is not a tag"),
    ],
)
def test_bad_ner_input(tiny_model, cli, tmp_path, name, text, message):
    sentences = "\n".join([text] * 12)  # enough sentences to split off validation data
    code, _, err = cli("train", "ner", "-c", config(tmp_path, tiny_model, write(tmp_path, name, sentences)))
    assert code == 2 and message in err and "Traceback" not in err, err
    assert not (tmp_path / "ner").exists()


def test_invalid_iob2_is_repaired_with_a_warning(tiny_model, ner_data, cli, tmp_path):
    import random

    from helpers.tiny import ner_sentence

    rng = random.Random(4)
    sentences = [ner_sentence(rng) for _ in range(60)]
    lines = [f"{t} {g}" for tokens, tags in sentences for t, g in [*zip(tokens, tags, strict=True), ("", "")]]
    bad = tmp_path / "bad.conll"
    bad.write_text("\n".join(line.strip() for line in lines) + "\nalice B-LOC\nsmith I-PER\n")
    code, _, err = cli(
        "train", "ner", "-c", config(tmp_path, tiny_model, bad), "--set", "ner.scheme=IOB2", "--set", "train.epochs=1"
    )
    assert code == 0, err
    assert "1 tag(s) did not fit the IOB2 scheme and were repaired" in err


def test_unknown_tag_at_evaluation(trained, cli, tmp_path):
    data = write(tmp_path, "misc.conll", "alice X X B-MISC\n")
    code, _, err = cli("evaluate", "-m", trained, "-d", data, "-o", tmp_path / "eval")
    assert code == 2 and "tag 'B-MISC' is not one the model knows" in err


def test_predict_on_plain_hf_token_classifier(trained, cli, tmp_path):
    import shutil

    plain = tmp_path / "plain"
    shutil.copytree(trained, plain)
    (plain / "bertkit.json").unlink()
    source = write(tmp_path, "in.txt", "chiara novak visited riga\n")
    code, out, err = cli("predict", "-m", plain, "-i", source)
    assert code == 0, err
    assert {(e["type"], e["text"]) for e in json.loads(out)["entities"]} == {("PER", "chiara novak"), ("LOC", "riga")}


# ---------------------------------------------------------------- words with no sub-word token

ZERO_TOKEN = ["\u00ad", "\u200b", "\ufffd"]  # a BERT WordPiece tokenizer gives them no token


def with_invisible_tokens(source, target, seed=5):
    """`source` (CoNLL) with tokens that have no sub-word put in after O tokens (gold tag O);
    returns the positions (sentence, token) of those tokens in `target`."""
    import random

    rng = random.Random(seed)
    lines, added, sentence, token = [], [], 0, 0
    previous = "O"
    for line in source.read_text().splitlines():
        fields = line.split()
        if not fields or fields[0] == "-DOCSTART-":
            if token:
                sentence, token = sentence + 1, 0
            lines.append(line)
            previous = "O"
            continue
        if previous == "O" and rng.random() < 0.25:
            lines.append(f"{rng.choice(ZERO_TOKEN)} X X O")
            added.append((sentence, token))
            token += 1
        lines.append(line)
        token += 1
        previous = fields[-1]
    target.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return added


def conll_tags(path):
    sentences, current = [], []
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            current.append(line.split()[-1])
        elif current:
            sentences.append(current)
            current = []
    return sentences + ([current] if current else [])


def test_invisible_tokens_move_no_tag_and_evaluate_scores_what_predict_writes(trained, cli, ner_data, tmp_path):
    from bertkit.core import metrics
    from bertkit.core.data.conll import read_conll
    from bertkit.tasks.ner.tags import to_iob2

    marked = tmp_path / "marked.conll"
    added = with_invisible_tokens(ner_data["test"], marked)
    assert len(added) > 20
    for source, target in ((ner_data["test"], tmp_path / "plain.pred"), (marked, tmp_path / "marked.pred")):
        code, _, err = cli("predict", "-m", trained, "-i", source, "--input-format", "conll", "-o", target)
        assert code == 0, err
    plain, with_marks = conll_tags(tmp_path / "plain.pred"), conll_tags(tmp_path / "marked.pred")
    assert len(plain) == len(with_marks)
    for sentence, token in added:
        assert with_marks[sentence][token] == "O"
    added_at = set(added)
    kept = [[tag for t, tag in enumerate(tags) if (s, t) not in added_at] for s, tags in enumerate(with_marks)]
    assert kept == plain  # every other token keeps its own tag

    # `evaluate` on the file scores exactly the tags `predict` wrote for it
    code, _, err = cli("evaluate", "-m", trained, "-d", marked, "-o", tmp_path / "eval")
    assert code == 0, err
    scored = json.loads((tmp_path / "eval" / "metrics.json").read_text())
    gold = [to_iob2(r["tags"], "IOB1").tags for r in read_conll(str(marked))]
    expected = metrics.load("ner").compute(predictions=with_marks, references=gold)
    for key in ("precision", "recall", "f1", "token_accuracy", "lenient_f1"):
        assert scored[key] == pytest.approx(expected[key]), key
    code, _, err = cli("evaluate", "-m", trained, "-d", ner_data["test"], "-o", tmp_path / "eval-plain")
    assert code == 0, err
    assert json.loads((tmp_path / "eval-plain" / "metrics.json").read_text())["f1"] == pytest.approx(scored["f1"])


def test_the_reported_sentence_from_stdin(trained, cli, monkeypatch):
    """`printf 'alice \\xc2\\xad met bruno rossi in kyoto\\n' | bertkit predict -m NER -i -`"""
    import io
    import sys

    found = {}
    for name, line in (
        ("plain", "alice met bruno rossi in kyoto"),
        ("marked", "alice \u00ad met bruno rossi in kyoto"),
    ):
        monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO((line + "\n").encode("utf-8"))))
        code, out, err = cli("predict", "-m", trained, "-i", "-", "--input-format", "text")
        assert code == 0, err
        record = json.loads(out)
        for entity in record["entities"]:
            assert record["text"][entity["start"] : entity["end"]] == entity["text"]
        found[name] = [(e["type"], e["text"]) for e in record["entities"]]
    assert ("PER", "bruno rossi") in found["marked"] and ("LOC", "kyoto") in found["marked"]
    assert found["marked"] == found["plain"]


def test_training_scores_evaluate_and_predict_agree_on_invisible_tokens(tiny_model, ner_data, cli, tmp_path):
    from bertkit.core import metrics
    from bertkit.core.data.conll import read_conll
    from bertkit.tasks.ner.tags import to_iob2

    marked = tmp_path / "marked.conll"
    with_invisible_tokens(ner_data["test"], marked, seed=6)
    code, _, err = cli("train", "ner", "-c", config(tmp_path, tiny_model, ner_data["train"], marked))
    assert code == 0, err
    bundle = tmp_path / "ner"
    during_training = json.loads((bundle / "metrics.json").read_text())["test"]
    code, _, err = cli("evaluate", "-m", bundle, "-d", marked, "-o", tmp_path / "eval")
    assert code == 0, err
    evaluated = json.loads((tmp_path / "eval" / "metrics.json").read_text())
    code, _, err = cli("predict", "-m", bundle, "-i", marked, "-o", tmp_path / "pred.conll")
    assert code == 0, err
    gold = [to_iob2(r["tags"], "IOB1").tags for r in read_conll(str(marked))]
    predicted = metrics.load("ner").compute(predictions=conll_tags(tmp_path / "pred.conll"), references=gold)
    for key in ("precision", "recall", "f1", "token_accuracy"):
        assert during_training[key] == pytest.approx(evaluated[key]), key
        assert predicted[key] == pytest.approx(evaluated[key]), key
    assert evaluated["f1"] > 0.9

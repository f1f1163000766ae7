"""The checks that stand in for a run say what the run says: `bertkit smoke` loads the real model
as training loads it (a damaged one stops both, with the same message), `bertkit inspect` reads the
records through the same validation as training (file:line included), the JUnit report stays XML
whatever a message holds, and `compare` refuses a model whose scores are not numbers."""

import json
import math
import os
import shutil
import xml.etree.ElementTree as ET

import pytest
from helpers.checks import assert_refused, write_config


def damaged(tmp_path, tiny_model, how: str):
    folder = tmp_path / f"model-{how}"
    shutil.copytree(tiny_model, folder)
    if how == "weights cut short":
        weights = folder / "model.safetensors"
        os.truncate(weights, weights.stat().st_size // 2)
    elif how == "tokenizer.json cut short":
        path = folder / "tokenizer.json"
        path.write_text(path.read_text()[: 200])
    elif how == "config.json not JSON":
        (folder / "config.json").write_text('{"model_type": "bert", ')
    return folder


@pytest.mark.slow  # a smoke run that passes its read stage trains
@pytest.mark.parametrize("how", ["weights cut short", "tokenizer.json cut short", "config.json not JSON"])
def test_smoke_refuses_a_damaged_model_as_training_does(cli, tmp_path, tiny_model, easy_data, how):
    model = damaged(tmp_path, tiny_model, how)
    config = write_config(tmp_path, model, easy_data["train"], extra="train:\n  epochs: 1\n")
    code, _, real = cli("train", "classify", "-c", config)
    assert_refused(code, real, str(model))
    message = " ".join(real.split("error: ")[-1].split())
    report = tmp_path / "smoke.xml"
    code, _, err = cli("smoke", "-c", config, "--junit", report)
    assert_refused(code, err, message)
    failure = ET.parse(report).getroot().find("testsuite/testcase/failure")
    assert failure is not None and " ".join(failure.text.split()) == message
    assert not (tmp_path / "out").exists()


def test_inspect_finds_weights_cut_short_without_loading_them(cli, tmp_path, tiny_model, easy_data):
    model = damaged(tmp_path, tiny_model, "weights cut short")
    config = write_config(tmp_path, model, easy_data["train"])
    code, _, err = cli("inspect", "-c", config)
    assert_refused(code, err, f"{model}: model.safetensors is damaged or incomplete", "training would not run")
    code, _, err = cli("train", "classify", "-c", config)
    assert_refused(code, err, f"{model}: model.safetensors is damaged or incomplete")


@pytest.mark.slow
def test_smoke_loads_the_real_model_as_the_run_does(cli, tmp_path, tiny_model, easy_data, monkeypatch):
    from bertkit import smoke
    from bertkit.training import run

    loaded = []
    real = run.starting_model

    def recorded(cfg, task, source, info):
        loaded.append(source)
        return real(cfg, task, source, info)

    monkeypatch.setattr(run, "starting_model", recorded)  # the training run's
    monkeypatch.setattr(smoke, "starting_model", recorded)  # smoke's own load of the real model
    config = write_config(tmp_path, tiny_model, easy_data["train"], extra="train:\n  epochs: 1\n")
    code, _, err = cli("smoke", "-c", config)
    assert code == 0, err
    assert loaded[0] == str(tiny_model)  # the real model first, then the tiny one the smoke run trains
    assert len(loaded) == 2 and loaded[1] != str(tiny_model)


def test_the_junit_report_stays_xml_whatever_a_message_holds(tmp_path):
    from bertkit.smoke import Stage, junit_xml

    detail = "train.csv:3: bad text 'a\x00b\x07c\x1b[31m\ud800' \ufffe"
    stages = [Stage("read", "failed", 1.0, detail), Stage("train", detail="not reached")]
    text = junit_xml(stages, tmp_path / "c\x01.yaml")
    root = ET.fromstring(text.encode("utf-8"))  # parses: the XML is well formed
    failure = root.find("testsuite/testcase/failure")
    assert failure.text == "train.csv:3: bad text 'a\\x00b\\x07c\\x1b[31m\\ud800' \\ufffe"
    assert root.find("testsuite").get("failures") == "1"


# ---------------------------------------------------------------- inspect agrees with training


def jsonl(tmp_path, name, rows):
    path = tmp_path / name
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


@pytest.mark.parametrize(
    "text, kind",
    [({"a": 1}, "JSON object"), (["a", "b"], "list"), (True, "true/false")],
    ids=["object", "list", "boolean"],
)
@pytest.mark.parametrize("column", ["text", "text_pair"])
def test_inspect_refuses_texts_that_training_refuses_with_file_and_line(cli, tmp_path, tiny_model, text, kind, column):
    rows = [{"text": f"film {i}", "text_pair": f"other {i}", "label": "pos" if i % 2 else "neg"} for i in range(20)]
    for row in rows:  # every record alike: the reader's check of mixed kinds does not see it
        row[column] = text
    train = jsonl(tmp_path, "train.jsonl", rows)
    extra = "  text_pair_column: text_pair\n" if column == "text_pair" else ""
    config = write_config(tmp_path, tiny_model, train)
    config.write_text(config.read_text().replace(f"  train: {train}\n", f"  train: {train}\n{extra}"))
    needle = f"{train}:1: '{column}' holds a {kind}, not text"
    code, _, err = cli("inspect", "-c", config)
    assert_refused(code, err, needle, "training would not run")
    code, _, err = cli("train", "classify", "-c", config)
    assert_refused(code, err, needle)
    assert not (tmp_path / "out").exists()


def test_embed_and_rerank_read_their_texts_the_same_way(cli, tmp_path, tiny_model):
    rows = [{"text": f"query {i}", "positive": {"passage": i}, "label": i % 2} for i in range(20)]
    train = jsonl(tmp_path, "pairs.jsonl", rows)
    for task in ("embed", "rerank"):
        config = write_config(tmp_path, tiny_model, train, task=task)
        pair = f"  train: {train}\n  text_pair_column: positive\n"
        config.write_text(config.read_text().replace(f"  train: {train}\n", pair))
        for command in (("inspect", "-c", config), ("train", task, "-c", config)):
            code, _, err = cli(*command)
            assert_refused(code, err, f"{train}:1: 'positive' holds a JSON object, not text")


# ---------------------------------------------------------------- compare


def test_compare_refuses_a_model_whose_score_is_not_a_number():
    from bertkit.comparison import Row, summarise
    from bertkit.core.errors import BertkitError

    class Scored:
        metrics = ("accuracy",)

        def __init__(self, value):
            self.value = value

        def score(self, indices=None):
            return {"accuracy": self.value}

        def __len__(self):
            return 4

    rows = [
        Row("good", "models/good", Scored(0.75), None, None, 1.0),
        Row("bad", "models/bad", Scored(math.nan), None, None, 1.0),
    ]
    with pytest.raises(BertkitError, match=r"models/bad: its accuracy on test\.csv is not a number \(nan\)"):
        summarise("classify", "test.csv", rows, 100, 0)

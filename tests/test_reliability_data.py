"""Nothing silent: config values and data that would be lost or change the task are errors that
name the file, the line and the key; the automatic validation split keeps every class."""

import json

import pytest
from helpers.checks import assert_refused

from bertkit.config import load_config, starter_yaml
from bertkit.core.data import split_by_class
from bertkit.core.data.readers import read_records
from bertkit.core.errors import BertkitError


@pytest.fixture
def train(tmp_path, tiny_model, cli):
    """Run `bertkit train TASK` on a config with `data` lines; returns (code, err)."""

    def run(data: str, *args, task="classify", extra=""):
        config = tmp_path / "run.yaml"
        config.write_text(
            f"task: {task}\nmodel:\n  name: {tiny_model}\n  max_length: 32\ndata:\n{data}"
            f"train:\n  epochs: 1\n  max_steps: 2\noutput_dir: {tmp_path / 'out'}\n{extra}"
        )
        code, _, err = cli("train", task, "-c", config, *args)
        return code, err

    return run


# ---------------------------------------------------------------- config


def test_a_key_given_twice_is_an_error(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text("task: classify\ntrain:\n  epochs: 1\ndata:\n  train: x.csv\ntrain:\n  batch_size: 4\n")
    with pytest.raises(BertkitError, match=r"c.yaml:6:1: key 'train' appears twice .*first on line 2"):
        load_config(path)
    path.write_text("train:\n  epochs: 1\n  epochs: 2\n")
    with pytest.raises(BertkitError, match=r"c.yaml:3:3: key 'epochs' appears twice"):
        load_config(path)


def test_set_values_are_taken_as_written():
    cfg = load_config(None, ["data.label_separator=|", "model.name=#foo", "data.labels=[a, b]", "train.epochs=2"])
    assert cfg.data.label_separator == "|" and cfg.model.name == "#foo"
    assert cfg.data.labels == ["a", "b"] and cfg.train.epochs == 2
    assert load_config(None, ["data.test=null"]).data.test is None
    assert load_config(None, ["model.name='quoted'"]).model.name == "quoted"


def test_set_errors_name_the_option_not_the_file(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text("task: classify\ntrain:\n  epochs: 1\n")
    with pytest.raises(BertkitError) as caught:
        load_config(path, ["train.epochs=many"])
    assert "--set train.epochs=many: train.epochs" in str(caught.value) and "c.yaml" not in str(caught.value)
    with pytest.raises(BertkitError, match="c.yaml:3: train.epochs"):
        load_config(path.with_name("d.yaml") if False else _write(path, "train:\n  x: 1\n  epochs: zero\n"))


def _write(path, text):
    path.write_text(text)
    return path


def test_labels_listed_twice_or_blank_separator():
    with pytest.raises(BertkitError, match="'pos' is listed twice"):
        load_config(None, ["data.labels=[pos, neg, pos]"])
    with pytest.raises(BertkitError, match="label_separator"):
        load_config(None, ["data.label_separator=' '"])


def test_config_init_marks_starter_values():
    text = starter_yaml("classify")
    assert "'starter value'" in text
    lines = text.splitlines()
    at = lines.index("  name: sentence-transformers/all-MiniLM-L6-v2")
    assert lines[at - 1] == "  # starter value; the default is bert-base-uncased"
    epochs = lines.index("  epochs: 3")
    assert "starter value" not in lines[epochs - 1]


# ---------------------------------------------------------------- readers


def test_duplicate_csv_columns_are_an_error(tmp_path):
    path = tmp_path / "d.csv"
    path.write_text("text,label,text\na,pos,b\n")
    with pytest.raises(BertkitError, match=r"d.csv:1: the header has 'text' twice \(columns 1 and 3\)"):
        list(read_records(str(path)))


def test_tsv_quotes_are_part_of_the_text(tmp_path):
    path = tmp_path / "d.tsv"
    path.write_text('text\tlabel\n"the film" was great\tpos\nsaid "no"\tneg\n"all of it"\tpos\n')
    assert [r["text"] for r in read_records(str(path))] == ['"the film" was great', 'said "no"', '"all of it"']


def test_an_unclosed_quote_is_reported_where_it_opens(tmp_path):
    path = tmp_path / "d.csv"
    path.write_text('text,label\ngood,pos\n"bad,neg\nfine,pos\nok,neg\n')
    with pytest.raises(BertkitError) as caught:
        list(read_records(str(path)))
    assert "d.csv:3:" in str(caught.value) and "quote" in str(caught.value)


def test_blank_lines_become_records_only_when_asked(tmp_path):
    path = tmp_path / "d.csv"
    path.write_text("text,label\na,pos\n\nb,neg\n")
    assert len(list(read_records(str(path)))) == 2
    kept = list(read_records(str(path), keep_blank=True))
    assert [r["text"] for r in kept] == ["a", "", "b"]


# ---------------------------------------------------------------- labels


@pytest.mark.parametrize("bad", ["nan", "inf", "-Infinity"])
def test_non_finite_labels_are_errors_with_their_line(train, tmp_path, bad):
    data = tmp_path / "scores.csv"
    rows = [f"text number {i},{0.5 + i / 10}" for i in range(30)]
    rows[7] = f"text number 7,{bad}"
    data.write_text("text,label\n" + "\n".join(rows) + "\n")
    code, err = train(f"  train: {data}\n")
    assert_refused(code, err, "scores.csv:9", "not a finite number")
    code, err = train(f"  train: {data}\n", "--set", "classify.problem_type=regression")
    assert_refused(code, err, "scores.csv:9", "not a finite number")
    assert not (tmp_path / "out").exists() and not (tmp_path / "out.partial").exists()


def test_label_errors_name_file_and_line(train, tmp_path):
    data = tmp_path / "d.csv"
    data.write_text("text,label\n" + "\n".join(f"t{i},{'pos' if i % 2 else 'neg'}" for i in range(30)) + "\nt,\n")
    code, err = train(f"  train: {data}\n")
    assert_refused(code, err, "d.csv:32", "empty 'label'")
    data.write_text("text,label\n" + "\n".join(f"t{i},{'pos' if i % 2 else 'neu'}" for i in range(30)) + "\n")
    code, err = train(f"  train: {data}\n  labels: [pos, neg]\n")
    assert_refused(code, err, "d.csv:2: label 'neu' is not in data.labels (pos, neg)")


@pytest.mark.slow
def test_ner_and_qa_files_given_to_a_classifier(train, tmp_path, cli, classify_bundle):
    conll = tmp_path / "d.conll"
    conll.write_text("Alice B-PER\nmet O\n\nBob B-PER\nleft O\n")
    code, err = train(f"  train: {conll}\n")
    assert_refused(code, err, "looks like NER data")
    code, _, err = cli("predict", "-m", classify_bundle, "-i", conll)
    assert_refused(code, err, "d.conll:1", "looks like NER data")
    squad = tmp_path / "q.jsonl"
    squad.write_text(json.dumps({"id": "1", "question": "who?", "context": "Alice met Bob."}) + "\n")
    code, _, err = cli("predict", "-m", classify_bundle, "-i", squad)
    assert_refused(code, err, "q.jsonl:1", "question-answering data")


@pytest.mark.slow
def test_a_rare_class_is_not_sent_wholly_to_validation(train, tmp_path):
    data = tmp_path / "d.csv"
    rows = [f"text {i},{'pos' if i % 2 else 'neg'}" for i in range(60)] + ["odd one,neutral", "odd two,neutral"]
    data.write_text("text,label\n" + "\n".join(rows) + "\n")
    for seed in range(5):
        code, err = train(f"  train: {data}\n", "--set", f"train.seed={seed}", "--overwrite")
        assert code == 0, err
        info = json.loads((tmp_path / "out" / "bertkit.json").read_text())
        assert info["labels"] == ["neg", "neutral", "pos"]


def test_split_by_class_keeps_the_share_of_each_class():
    classes = ["a"] * 90 + ["b"] * 9 + ["c"]
    kept, held = split_by_class(classes, 0.1, seed=3)
    assert len(held) == 10 and sorted(kept + held) == list(range(100))
    assert sum(classes[i] == "b" for i in held) == 1 and all(classes[i] != "c" for i in held)
    assert {classes[i] for i in kept} == {"a", "b", "c"}
    with pytest.raises(BertkitError, match="single example"):
        split_by_class(["a", "b", "c"], 0.5, seed=0)


# ---------------------------------------------------------------- fields that would be ignored


def test_ner_span_data_with_another_entities_key(cli, tmp_path, head_models):
    data = tmp_path / "spans.jsonl"
    data.write_text(json.dumps({"text": "Alice met Bob", "spans": [{"start": 0, "end": 5, "type": "PER"}]}) + "\n")
    code, _, err = cli("evaluate", "-m", head_models["ner"], "-d", data, "-o", tmp_path / "e")
    assert_refused(code, err, "spans.jsonl, record 1", "no 'entities' field", "ner.entities_field")
    data.write_text(json.dumps({"text": "Alice met Bob", "entities": []}) + "\n")
    code, _, err = cli("evaluate", "-m", head_models["ner"], "-d", data, "-o", tmp_path / "e")
    assert_refused(code, err, "no entities at all")
    assert not (tmp_path / "e").exists()


def test_qa_records_with_another_answers_key(train, tmp_path):
    data = tmp_path / "qa.jsonl"
    rows = [{"id": str(i), "question": "which?", "context": "a b c", "answer": {"text": ["b"]}} for i in range(20)]
    data.write_text("".join(json.dumps(r) + "\n" for r in rows))
    code, err = train(f"  train: {data}\n", task="qa")
    assert_refused(code, err, "qa.jsonl, record 1", "no 'answers' field", "qa.answers_field")

"""Every mistake a user can make ends with one clear message, exit code 2, no traceback and no
half-written output."""

import time

import pytest


@pytest.fixture
def run_config(tmp_path, tiny_model, easy_data, cli):
    def run(body: str | None = None, *args, **replace):
        values = {"model": tiny_model, "train": easy_data["train"], "out": tmp_path / "out", **replace}
        text = (
            body
            if body is not None
            else (
                "task: classify\nmodel:\n  name: {model}\n  max_length: 32\n"
                "data:\n  train: {train}\ntrain:\n  epochs: 1\noutput_dir: {out}\n"
            )
        )
        path = tmp_path / "run.yaml"
        path.write_text(text.format(**values))
        code, out, err = cli("train", "classify", "-c", path, *args)
        return code, err

    return run


def assert_clean_failure(code, err, *needles, where=None):
    assert code == 2, err
    assert "Traceback" not in err
    for needle in needles:
        assert needle in err, err
    if where is not None:
        assert not (where / "out").exists()
        assert not list(where.glob(".out.tmp-*"))


def test_missing_config(cli):
    code, _, err = cli("train", "classify", "-c", "missing.yaml")
    assert_clean_failure(code, err, "config file not found: missing.yaml")


def test_yaml_syntax_error(run_config, tmp_path):
    code, err = run_config("model:\n  name: x\n  bad: [unclosed\n")
    assert_clean_failure(code, err, "run.yaml:4", "YAML syntax error", where=tmp_path)


def test_unknown_key(run_config, tmp_path):
    code, err = run_config("train:\n  epohcs: 2\n")
    assert_clean_failure(code, err, "run.yaml:2", "unknown key 'train.epohcs'", "did you mean 'epochs'", where=tmp_path)


def test_wrong_type(run_config, tmp_path):
    code, err = run_config("train:\n  batch_size: sixteen\n")
    assert_clean_failure(code, err, "run.yaml:2", "train.batch_size", where=tmp_path)


def test_data_file_missing(run_config, tmp_path):
    code, err = run_config(None, train=tmp_path / "nope.csv")
    assert_clean_failure(code, err, "data file not found", "nope.csv", where=tmp_path)


def test_text_column_missing_lists_columns(run_config, tmp_path):
    code, err = run_config(None, "--set", "data.text_column=review")
    assert_clean_failure(
        code, err, "no column 'review'", "data.text_column", "Columns there: text, label", where=tmp_path
    )


def test_label_column_missing(run_config, tmp_path):
    code, err = run_config(None, "--set", "data.label_column=sentiment")
    assert_clean_failure(code, err, "no column 'sentiment'", where=tmp_path)


def test_empty_data(run_config, tmp_path):
    empty = tmp_path / "empty.csv"
    empty.write_text("text,label\n")
    code, err = run_config(None, train=empty)
    assert_clean_failure(code, err, "no examples", where=tmp_path)


def test_unseen_label_in_validation(run_config, tmp_path, easy_data):
    validation = tmp_path / "dev.csv"
    validation.write_text("text,label\ngreat film,positive\nso-so film,neutral\n")
    code, err = run_config(None, "--set", f"data.validation={validation}")
    assert_clean_failure(code, err, "dev.csv:3: label 'neutral'", "data.labels", where=tmp_path)


def test_malformed_csv_line(run_config, tmp_path):
    bad = tmp_path / "bad.csv"
    bad.write_text("text,label\ngood,positive\nbad, really bad,negative\n")
    code, err = run_config(None, train=bad)
    assert_clean_failure(code, err, f"{bad}:3", "expected 2 fields", where=tmp_path)


def test_malformed_jsonl_line(run_config, tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"text": "good", "label": "p"}\n{"text": "bad" "label": "n"}\n')
    code, err = run_config(None, train=bad)
    assert_clean_failure(code, err, f"{bad}:2", "not valid JSON", where=tmp_path)


def test_non_utf8(run_config, tmp_path):
    bad = tmp_path / "latin.csv"
    bad.write_bytes("text,label\nvery good,positive\nna\xefve,negative\n".encode("latin-1"))
    code, err = run_config(None, train=bad)
    assert_clean_failure(code, err, f"{bad}:3", "not UTF-8", where=tmp_path)


def test_existing_output_needs_overwrite(run_config, tmp_path):
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "keep.txt").write_text("precious")
    code, err = run_config(None)
    assert code == 2 and "--overwrite" in err and "Traceback" not in err
    assert (tmp_path / "out" / "keep.txt").read_text() == "precious"


def test_fp16_without_gpu(run_config, tmp_path):
    code, err = run_config(None, "--set", "train.precision=fp16")
    assert_clean_failure(code, err, "fp16 needs a CUDA GPU", where=tmp_path)


def test_model_that_is_not_a_model_directory(cli, tmp_path):
    (tmp_path / "notes").mkdir()
    source = tmp_path / "in.txt"
    source.write_text("hello\n")
    code, _, err = cli("predict", "-m", tmp_path / "notes", "-i", source)
    assert_clean_failure(code, err, "not a model directory")
    code, _, err = cli("predict", "-m", tmp_path / "nowhere", "-i", source)
    assert_clean_failure(code, err, "not found")
    code, _, err = cli("predict", "-m", source, "-i", source)
    assert_clean_failure(code, err, "not a directory")


@pytest.mark.slow
def test_predict_empty_input_writes_nothing(cli, tmp_path, run_config):
    assert run_config(None)[0] == 0
    empty = tmp_path / "empty.txt"
    empty.write_text("")  # (blank lines are inputs: each gets an empty result, see test_prediction_blank_lines.py)
    code, _, err = cli("predict", "-m", tmp_path / "out", "-i", empty, "-o", tmp_path / "pred.jsonl")
    assert_clean_failure(code, err, "no input records")
    assert not (tmp_path / "pred.jsonl").exists() and not list(tmp_path.glob(".pred.jsonl.tmp-*"))


def test_hub_model_offline_fails_fast(run_config, tmp_path):
    started = time.perf_counter()
    code, err = run_config(None, model="bert-base-uncased")
    assert_clean_failure(code, err, "model 'bert-base-uncased'", "offline", where=tmp_path)
    assert time.perf_counter() - started < 5


def test_hub_unreachable_fails_fast(run_config, tmp_path, monkeypatch):
    from bertkit.core import hub

    monkeypatch.setenv("HF_HUB_OFFLINE", "0")
    monkeypatch.setenv("HF_ENDPOINT", "http://127.0.0.1:9")  # nothing listens on the discard port
    hub.reachable.cache_clear()
    started = time.perf_counter()
    code, err = run_config(None, model="no-such-org/no-such-model")
    hub.reachable.cache_clear()
    assert_clean_failure(code, err, "cannot be reached", where=tmp_path)
    assert time.perf_counter() - started < 5


def test_hub_dataset_offline(run_config, tmp_path):
    body = (
        "task: classify\nmodel:\n  name: {model}\n  max_length: 32\n"
        "data:\n  train: {{hub: imdb, split: train}}\noutput_dir: {out}\n"
    )
    code, err = run_config(body)
    assert_clean_failure(code, err, "data set 'imdb'", "local file", where=tmp_path)


def test_config_without_training_data(run_config):
    code, err = run_config("task: classify\n")
    assert_clean_failure(code, err, "no data.train")


def test_too_little_data_to_split(run_config, tmp_path):
    tiny = tmp_path / "tiny.csv"
    tiny.write_text("text,label\ngood,positive\nbad,negative\n")
    code, err = run_config(None, train=tiny)
    assert_clean_failure(code, err, "too few to split off a validation", "data.validation", where=tmp_path)

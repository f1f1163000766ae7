"""bertkit/tasks/bundle.py, opening a bundle: files that are valid JSON but say the wrong thing (a
list for an object, a task that is not a name, a length that is not a number, labels that do not
fit the model's head, broken sentence-transformers files) are one clear error naming the file,
with exit code 2, whichever command loads the model."""

import json
import shutil

import pytest
from helpers.checks import assert_refused


def _copy(tmp_path, source, name="model"):
    folder = tmp_path / name
    shutil.copytree(source, folder)
    return folder


def _edit_json(path, change):
    data = json.loads(path.read_text())
    change(data)
    path.write_text(json.dumps(data))


@pytest.fixture
def texts(tmp_path):
    source = tmp_path / "in.txt"
    source.write_text("great film\n")
    return source


def _set(key, value):
    def change(info):
        info[key] = value

    return change


def _drop_label(info):
    info["labels"] = info["labels"][:1]


@pytest.mark.parametrize(
    "name, write, needle",
    [
        ("list", lambda p: p.write_text("[]"), "bertkit.json is not a JSON object (it holds a list)"),
        ("string", lambda p: p.write_text('"classify"'), "bertkit.json is not a JSON object (it holds a string)"),
        ("task-number", lambda p: _edit_json(p, _set("task", 3)), "'task' must be one of classify"),
        ("task-list", lambda p: _edit_json(p, _set("task", ["classify"])), "'task' must be one of classify"),
        ("length-text", lambda p: _edit_json(p, _set("max_length", "long")), "'max_length' must be a positive"),
        ("length-zero", lambda p: _edit_json(p, _set("max_length", 0)), "'max_length' must be a positive"),
        ("length-negative", lambda p: _edit_json(p, _set("max_length", -4)), "'max_length' must be a positive"),
        ("length-bool", lambda p: _edit_json(p, _set("max_length", True)), "'max_length' must be a positive"),
        ("length-float", lambda p: _edit_json(p, _set("max_length", 3.5)), "'max_length' must be a positive"),
        ("labels-text", lambda p: _edit_json(p, _set("labels", "positive")), "'labels' must be a list"),
        ("labels-short", lambda p: _edit_json(p, _drop_label), "lists 1 label, but"),
        ("problem", lambda p: _edit_json(p, _set("problem_type", "poetry")), "'problem_type' must be one of"),
        ("calibration-text", lambda p: _edit_json(p, _set("calibration", "hot")), "'calibration': must be an object"),
        ("temperatures-short", lambda p: _edit_json(p, _set("calibration", {"temperatures": [2.0]})),
         "'temperatures' must be 2 positive numbers"),
        ("temperature-zero", lambda p: _edit_json(p, _set("calibration", {"temperatures": [0, 0]})),
         "'temperatures' must be 2 positive numbers"),
        ("temperature-text", lambda p: _edit_json(p, _set("calibration", {"temperatures": ["2", "2"]})),
         "'temperatures' must be 2 positive numbers"),
        ("map-falling", lambda p: _edit_json(p, _set("calibration", {
            "temperatures": [1, 1], "confidence_map": {"x": [0.9, 0.5], "y": [1, 1]}})),
         "'confidence_map' must hold"),
        ("map-alone", lambda p: _edit_json(p, _set("calibration", {"confidence_map": {"x": [0.5], "y": [0.6]}})),
         "needs its 'temperatures'"),
    ],
)  # fmt: skip
@pytest.mark.slow
def test_wrong_bundle_descriptions_are_refused(cli, tmp_path, classify_bundle, texts, name, write, needle):
    folder = _copy(tmp_path, classify_bundle)
    write(folder / "bertkit.json")
    out = tmp_path / "pred.jsonl"
    code, _, err = cli("predict", "-m", folder, "-i", texts, "-o", out)
    assert_refused(code, err, str(folder / "bertkit.json"), needle)
    assert not out.exists()


@pytest.mark.slow
def test_labels_that_do_not_fit_the_model_name_both_files(cli, tmp_path, classify_bundle, texts):
    folder = _copy(tmp_path, classify_bundle)
    _edit_json(folder / "bertkit.json", _drop_label)
    code, _, err = cli("predict", "-m", folder, "-i", texts)
    assert_refused(code, err, "bertkit.json lists 1 label, but", "config.json", "has 2")
    code, _, err = cli("evaluate", "-m", folder, "-d", texts, "-o", tmp_path / "eval")
    assert_refused(code, err, "bertkit.json lists 1 label")
    assert not (tmp_path / "eval").exists()


def test_ner_labels_that_do_not_fit_the_model_are_refused(cli, tmp_path, head_models, texts):
    folder = _copy(tmp_path, head_models["ner"])
    (folder / "bertkit.json").write_text(json.dumps({"task": "ner", "labels": ["O", "B-LOC"], "max_length": 32}))
    code, _, err = cli("predict", "-m", folder, "-i", texts)
    assert_refused(code, err, "bertkit.json lists 2 labels, but", "has 5")


@pytest.mark.slow
def test_a_config_json_that_is_not_an_object_is_refused(cli, tmp_path, classify_bundle, texts):
    folder = _copy(tmp_path, classify_bundle)
    (folder / "config.json").write_text("[]")
    code, _, err = cli("predict", "-m", folder, "-i", texts)
    assert_refused(code, err, str(folder / "config.json"), "is not a JSON object")
    for trust in ([], ["--trust-remote-code"]):
        code, _, err = cli("embed", "-m", folder, "-i", texts, "-o", tmp_path / "v.npy", *trust)
        assert_refused(code, err, str(folder / "config.json"), "is not a JSON object")


@pytest.mark.parametrize(
    "info, needle",
    [
        ([], "is not a JSON object"),
        ({"task": "classify", "max_length": "x"}, "'max_length' must be a positive"),
        ({"task": {"name": "embed"}}, "'task' must be one of"),
    ],
)
def test_embed_reads_the_bundle_description_through_the_same_checks(cli, tmp_path, tiny_model, texts, info, needle):
    folder = _copy(tmp_path, tiny_model)
    (folder / "bertkit.json").write_text(json.dumps(info))
    code, _, err = cli("embed", "-m", folder, "-i", texts, "-o", tmp_path / "v.npy")
    assert_refused(code, err, str(folder / "bertkit.json"), needle)
    assert not (tmp_path / "v.npy").exists()


def test_an_embed_bundle_without_pooling_needs_it_given(cli, tmp_path, tiny_model, texts):
    folder = _copy(tmp_path, tiny_model)
    (folder / "bertkit.json").write_text(json.dumps({"task": "embed", "max_length": 32}))
    code, _, err = cli("embed", "-m", folder, "-i", texts, "-o", tmp_path / "v.npy")
    assert_refused(code, err, str(folder / "bertkit.json"), "no pooling", "--pooling")
    code, _, err = cli("search", "-m", folder, "--corpus", texts, "-q", "film", "--no-cache")
    assert_refused(code, err, "no pooling")
    # the option says what the file does not
    code, _, err = cli("embed", "-m", folder, "-i", texts, "-o", tmp_path / "v.npy", "--pooling", "mean")
    assert code == 0, err
    (folder / "bertkit.json").write_text(json.dumps({"task": "embed", "pooling": "sum", "normalize": "yes"}))
    code, _, err = cli("embed", "-m", folder, "-i", texts, "-o", tmp_path / "v.npy")
    assert_refused(code, err, "'pooling' must be one of mean, cls, max, pooler")
    (folder / "bertkit.json").write_text(json.dumps({"task": "embed", "pooling": "cls", "normalize": "yes"}))
    code, _, err = cli("embed", "-m", folder, "-i", texts, "-o", tmp_path / "v.npy")
    assert_refused(code, err, "'normalize' must be true or false")


def _pooling_module(folder):
    (folder / "modules.json").write_text(
        json.dumps(
            [
                {"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
                {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"},
            ]
        )
    )
    (folder / "1_Pooling").mkdir()
    (folder / "1_Pooling" / "config.json").write_text(json.dumps({"pooling_mode_cls_token": True}))
    (folder / "sentence_bert_config.json").write_text(json.dumps({"max_seq_length": 64}))


@pytest.mark.parametrize(
    "file, content, needle",
    [
        ("modules.json", {"0": "Transformer"}, "must be a list of modules"),
        ("modules.json", [1, 2], "must be a list of modules"),
        ("modules.json", [{"type": 3, "path": ""}], "'type' and 'path' must be text"),
        ("1_Pooling/config.json", [], "is not a JSON object"),
        ("1_Pooling/config.json", {"pooling_mode_sum": True}, "does not name a pooling mode bertkit knows"),
        ("sentence_bert_config.json", [], "is not a JSON object"),
        ("sentence_bert_config.json", {"max_seq_length": "long"}, "'max_seq_length' must be a positive"),
    ],
)
def test_broken_sentence_transformers_files_are_refused(cli, tmp_path, tiny_model, texts, file, content, needle):
    folder = _copy(tmp_path, tiny_model)
    _pooling_module(folder)
    code, _, err = cli("embed", "-m", folder, "-i", texts, "-o", tmp_path / "v.npy")
    assert code == 0 and "pooling cls" in " ".join(err.split()), err
    (folder / file).write_text(json.dumps(content))
    code, _, err = cli("embed", "-m", folder, "-i", texts, "-o", tmp_path / "w.npy")
    assert_refused(code, err, str(folder / file), needle)
    assert not (tmp_path / "w.npy").exists()


# ---------------------------------------------------------------- the search cache


# ---------------------------------------------------------------- tokenizer train: its output


# ---------------------------------------------------------------- config init: its output



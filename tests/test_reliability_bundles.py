"""Bundle files that are valid JSON but say the wrong thing (a list for an object, a task that is
not a name, a length that is not a number, labels that do not fit the model's head, broken
sentence-transformers files) are one clear error naming the file, with exit code 2, whichever
command loads the model."""

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
    ],
)
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


@pytest.fixture
def corpus(tmp_path):
    source = tmp_path / "corpus.txt"
    source.write_text("a great film\n\nan awful meal\na lovely trip\n")
    return source


def _search(cli, model, corpus, cache):
    code, out, err = cli("search", "-m", model, "--corpus", corpus, "-q", "great film", "--cache-dir", cache, "-k", "2")
    assert code == 0, err
    return json.loads(out), " ".join(err.split())


@pytest.mark.parametrize(
    "damage",
    [
        pytest.param(lambda p: p.write_bytes(b"garbage, not numpy"), id="garbage"),
        pytest.param(lambda p: p.write_bytes(p.read_bytes()[: len(p.read_bytes()) // 2]), id="truncated"),
        pytest.param(lambda p: p.write_bytes(b""), id="empty"),
        pytest.param(lambda p: np_save(p, [[0.5] * 3] * 4), id="narrow"),
        pytest.param(lambda p: np_save(p, [[0.5] * 64] * 7), id="rows"),
        pytest.param(lambda p: np_save(p, [0.5] * 4), id="flat"),
        pytest.param(lambda p: np_save(p, [[float("nan")] * 64] * 4), id="nan"),
        pytest.param(lambda p: np_save(p, [{"a": 1}] * 4), id="objects"),
    ],
)
def test_a_broken_search_cache_is_rebuilt(cli, tmp_path, tiny_model, corpus, damage):
    cache = tmp_path / "cache"
    first, _ = _search(cli, tiny_model, corpus, cache)
    (cached,) = cache.glob("*.npy")
    damage(cached)
    again, err = _search(cli, tiny_model, corpus, cache)
    assert again == first
    assert f"corpus embeddings in {cached} are damaged" in err and "embedding the corpus again" in err, err
    import numpy as np

    assert np.load(cached).shape == (4, 64)
    _, err = _search(cli, tiny_model, corpus, cache)
    assert "reused" in err and "are damaged" not in err


def np_save(path, rows):
    import numpy as np

    with open(path, "wb") as handle:
        np.save(handle, np.array(rows), allow_pickle=True)


def test_an_unwritable_search_cache_is_a_warning(cli, tmp_path, tiny_model, corpus):
    blocked = tmp_path / "a-file"
    blocked.write_text("not a folder")
    for cache in (blocked, blocked / "sub"):
        hits, err = _search(cli, tiny_model, corpus, cache)
        assert hits["hits"][0]["text"] == "a great film" or len(hits["hits"]) == 2
        assert "cannot keep the corpus embeddings" in err and "without the cache" in err, err
    assert blocked.read_text() == "not a folder"


# ---------------------------------------------------------------- tokenizer train: its output


@pytest.fixture
def words(tmp_path):
    source = tmp_path / "words.txt"
    source.write_text("\n".join(f"word{i} and more words here" for i in range(200)) + "\n")
    return source


def _no_learning(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("the vocabulary was learnt before the output was checked")

    monkeypatch.setattr("bertkit.core.tokenizer_training.train_wordpiece", refuse)


def test_tokenizer_output_under_a_file_is_refused_before_learning(cli, tmp_path, words, monkeypatch):
    _no_learning(monkeypatch)
    blocker = tmp_path / "one.txt"
    blocker.write_text("mine")
    for target in (blocker / "sub", blocker / "sub" / "deeper"):
        code, _, err = cli("tokenizer", "train", "-i", words, "-o", target, "--vocab-size", "60")
        assert_refused(code, err, f"cannot write {target}", f"{blocker} is a file, not a folder")
    assert blocker.read_text() == "mine"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["one.txt", "words.txt"]


@pytest.mark.skipif(not hasattr(__import__("os"), "geteuid") or __import__("os").geteuid() == 0, reason="root")
def test_tokenizer_output_in_an_unwritable_folder_is_refused_before_learning(cli, tmp_path, words, monkeypatch):
    _no_learning(monkeypatch)
    locked = tmp_path / "locked"
    locked.mkdir(mode=0o500)
    try:
        code, _, err = cli("tokenizer", "train", "-i", words, "-o", locked / "tok", "--vocab-size", "60")
    finally:
        locked.chmod(0o700)
    assert_refused(code, err, f"cannot write {locked / 'tok'}")


def _disk_full_after_a_file(error):
    def save(self, folder, *args, **kwargs):
        from pathlib import Path

        (Path(folder) / "vocab.txt").write_text("[PAD]\n")
        raise error(Path(folder) / "tokenizer.json")

    return save


@pytest.mark.parametrize(
    "error",
    [
        # the Rust tokenizers library reports a failed write as a plain Exception
        pytest.param(lambda path: Exception("No space left on device (os error 28)"), id="rust"),
        pytest.param(lambda path: OSError(28, "No space left on device", str(path)), id="oserror"),
    ],
)
def test_tokenizer_write_failures_name_the_target_not_a_temporary(cli, tmp_path, words, monkeypatch, error):
    from transformers import PreTrainedTokenizerBase

    monkeypatch.setattr(PreTrainedTokenizerBase, "save_pretrained", _disk_full_after_a_file(error))
    target = tmp_path / "tok"
    code, _, err = cli("tokenizer", "train", "-i", words, "-o", target, "--vocab-size", "60")
    assert_refused(code, err, f"cannot write {target}: No space left on device")
    assert ".tmp-" not in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["words.txt"]


def test_tokenizer_manifest_write_failure_names_the_target(cli, tmp_path, words, monkeypatch):
    from bertkit.core import outputs
    from bertkit.core.outputs import dirs

    def full(path, data):
        raise outputs.writing_failed(OSError(28, "No space left on device"), path)

    monkeypatch.setattr(dirs, "write_json", full)  # the manifest's writer
    target = tmp_path / "tok"
    code, _, err = cli("tokenizer", "train", "-i", words, "-o", target, "--vocab-size", "60")
    assert_refused(code, err, f"cannot write {target / '.bertkit-output.json'}: No space left on device")
    assert ".tmp-" not in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["words.txt"]


# ---------------------------------------------------------------- config init: its output


def test_config_init_to_stdout_with_a_dash(cli, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    code, plain, _ = cli("config", "init", "ner")
    assert code == 0
    code, dashed, err = cli("config", "init", "ner", "-o", "-")
    assert code == 0 and dashed == plain, err
    assert list(tmp_path.iterdir()) == []


def test_config_init_makes_missing_folders_and_leaves_no_temporaries(cli, tmp_path):
    _, text, _ = cli("config", "init", "qa")
    target = tmp_path / "configs" / "runs" / "qa.yaml"
    code, _, err = cli("config", "init", "qa", "-o", target)
    assert code == 0, err
    assert target.read_text(encoding="utf-8") == text
    assert [p.name for p in target.parent.iterdir()] == ["qa.yaml"]


def test_config_init_refusals(cli, tmp_path):
    blocker = tmp_path / "notes.txt"
    blocker.write_text("mine")
    code, _, err = cli("config", "init", "classify", "-o", blocker / "run.yaml")
    assert_refused(code, err, f"cannot write {blocker / 'run.yaml'}", f"{blocker} is a file, not a folder")
    code, _, err = cli("config", "init", "classify", "-o", tmp_path)
    assert_refused(code, err, f"--output {tmp_path} is a directory")
    code, _, err = cli("config", "init", "classify", "-o", blocker)
    assert_refused(code, err, f"{blocker} already exists", "--overwrite")
    assert blocker.read_text() == "mine"
    code, _, err = cli("config", "init", "clasify", "-o", tmp_path / "new" / "x.yaml")
    assert_refused(code, err, "did you mean 'classify'")
    assert not (tmp_path / "new").exists()
    code, _, err = cli("config", "init", "classify", "-o", blocker, "--overwrite")
    assert code == 0, err
    assert blocker.read_text().startswith("# bertkit config")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["notes.txt"]

"""bertkit/core/models.py: models are loaded safely. Code shipped with a model runs only with
--trust-remote-code (never through a prompt), a broken model directory (a damaged vocab.txt
included) is one clear error, and lengths a model cannot read are refused before training."""

import json
import os
import shutil
import subprocess
import sys

import pytest
from helpers.checks import assert_refused, write_config

from bertkit.core.errors import BertkitError

CONFIG_CODE = """
from transformers import BertConfig


class MarkedConfig(BertConfig):
    model_type = "marked-bert"
"""
MODEL_CODE = """
import pathlib, os

from transformers import BertForSequenceClassification

from .configuration_marked import MarkedConfig

pathlib.Path(os.environ["BERTKIT_TEST_MARKER"]).write_text("the bundle's code ran")


class MarkedModel(BertForSequenceClassification):
    config_class = MarkedConfig
"""


@pytest.fixture
def custom_code_bundle(tmp_path, classify_bundle):
    folder = tmp_path / "custom"
    shutil.copytree(classify_bundle, folder)
    config = json.loads((folder / "config.json").read_text())
    config["model_type"] = "marked-bert"
    config["auto_map"] = {
        "AutoConfig": "configuration_marked.MarkedConfig",
        "AutoModelForSequenceClassification": "modeling_marked.MarkedModel",
    }
    (folder / "config.json").write_text(json.dumps(config))
    (folder / "configuration_marked.py").write_text(CONFIG_CODE)
    (folder / "modeling_marked.py").write_text(MODEL_CODE)
    return folder


def run_bertkit(*args, stdin: bytes = b"", env=None):
    result = subprocess.run(
        [sys.executable, "-m", "bertkit", *map(str, args)],
        input=stdin,
        capture_output=True,
        env={**os.environ, "HF_HUB_OFFLINE": "1", **(env or {})},
        timeout=120,
    )
    return result.returncode, result.stdout.decode(), result.stderr.decode()


@pytest.mark.slow
def test_custom_code_never_runs_on_consent_read_from_the_data(custom_code_bundle, tmp_path):
    marker = tmp_path / "ran.txt"
    env = {"BERTKIT_TEST_MARKER": str(marker), "HF_MODULES_CACHE": str(tmp_path / "modules")}
    code, out, err = run_bertkit("predict", "-m", custom_code_bundle, "-i", "-", stdin=b"y\ngreat film\n", env=env)
    assert_refused(code, err, "config.json asks to run Python code", "modeling_marked.py", "--trust-remote-code")
    assert not marker.exists() and "[y/N]" not in out + err and out == ""
    code, _, err = run_bertkit("embed", "-m", custom_code_bundle, "-i", "-", "-o", tmp_path / "v.npy", env=env)
    assert_refused(code, err, "--trust-remote-code")
    assert not marker.exists()
    # with consent given on the command line, the model's code runs and predicts
    code, out, err = run_bertkit(
        "predict", "-m", custom_code_bundle, "-i", "-", "--trust-remote-code", stdin=b"great film\n", env=env
    )
    assert code == 0, err
    assert marker.exists() and json.loads(out)["label"] in ("positive", "negative")


@pytest.mark.slow
def test_train_from_a_model_with_custom_code_needs_consent(cli, tmp_path, custom_code_bundle, easy_data):
    config = write_config(tmp_path, custom_code_bundle, easy_data["train"])
    code, _, err = cli("train", "classify", "-c", config)
    assert_refused(code, err, "asks to run Python code", "model.trust_remote_code: true")
    assert not (tmp_path / "out").exists() and not (tmp_path / "out.partial").exists()


def _broken(tmp_path, bundle, name, damage):
    folder = tmp_path / name
    shutil.copytree(bundle, folder)
    damage(folder)
    return folder


def _truncate(path):
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])


@pytest.mark.parametrize(
    "name, damage, needle",
    [
        ("no-weights", lambda f: (f / "model.safetensors").unlink(), "no model weights in it"),
        ("truncated", lambda f: _truncate(f / "model.safetensors"), "model.safetensors is damaged or incomplete"),
        ("garbage", lambda f: (f / "model.safetensors").write_bytes(b"\x00" * 64), "model.safetensors is damaged"),
        ("bad-config", lambda f: (f / "config.json").write_text("{not json"), "config.json:1: not valid JSON"),
        ("bad-info", lambda f: (f / "bertkit.json").write_text('{"task": '), "bertkit.json:1: not valid JSON"),
        ("no-task", lambda f: (f / "bertkit.json").write_text("{}"), "does not name the model's task"),
        ("odd-task", lambda f: (f / "bertkit.json").write_text('{"task": "dance"}'), "unknown task 'dance'"),
        ("no-type", lambda f: (f / "config.json").write_text("{}"), "does not say which kind of model"),
        (
            "no-tokenizer",
            lambda f: [(f / n).unlink() for n in ("tokenizer.json", "tokenizer_config.json")],
            "has no tokenizer files",
        ),
        ("bad-tokenizer", lambda f: _truncate(f / "tokenizer.json"), "tokenizer.json"),
    ],
)
@pytest.mark.slow
def test_broken_model_directories_are_clear_errors(cli, tmp_path, classify_bundle, name, damage, needle):
    folder = _broken(tmp_path, classify_bundle, name, damage)
    source = tmp_path / "in.txt"
    source.write_text("great film\n")
    code, _, err = cli("predict", "-m", folder, "-i", source, "-o", tmp_path / "pred.jsonl")
    assert_refused(code, err, needle)
    assert not (tmp_path / "pred.jsonl").exists()
    if name not in ("bad-info", "no-task", "odd-task"):  # embed reads any model directory
        code, _, err = cli("embed", "-m", folder, "-i", source, "-o", tmp_path / "v.npy")
        assert code == 2 and "Traceback" not in err, err


def test_max_length_beyond_the_model_is_refused_before_training(cli, tmp_path, tiny_model, easy_data):
    config = write_config(tmp_path, tiny_model, easy_data["train"], max_length=4096)
    code, _, err = cli("train", "classify", "-c", config)
    assert_refused(code, err, "model.max_length: 4096 tokens", "reads at most 128", "Set model.max_length: 128")
    assert not (tmp_path / "out").exists() and not (tmp_path / "out.partial").exists()


@pytest.mark.slow
def test_a_bundle_that_records_too_long_a_length_still_predicts(cli, tmp_path, classify_bundle):
    folder = tmp_path / "old"
    shutil.copytree(classify_bundle, folder)
    info = json.loads((folder / "bertkit.json").read_text())
    info["max_length"] = 4096  # as bundles of earlier versions could record
    (folder / "bertkit.json").write_text(json.dumps(info))
    source = tmp_path / "long.txt"
    source.write_text(" ".join(["great"] * 600) + "\n")
    code, out, err = cli("predict", "-m", folder, "-i", source)
    assert code == 0, err
    assert json.loads(out)["label"] in ("positive", "negative")


@pytest.mark.parametrize("vocab", [b"", b"\xff\xfe\x00garbage\x80\n"])
def test_a_damaged_vocab_txt_is_a_clear_error(tiny_model, tmp_path, vocab, cli):
    model = tmp_path / "model"
    shutil.copytree(tiny_model, model)
    (model / "tokenizer.json").unlink()
    (model / "vocab.txt").write_bytes(vocab)
    from bertkit.core.tokenization import load_tokenizer

    with pytest.raises(BertkitError, match=r"tokenizer files \(vocab.txt\) are damaged or incomplete"):
        load_tokenizer(str(model))
    code, _, err = cli("tokenize", "-m", model, "hello")
    assert code == 2 and "vocab.txt" in err and "Traceback" not in err


def test_max_length_beyond_the_model_is_refused_not_cut(tiny_model, tmp_path, cli):
    texts = tmp_path / "texts.txt"
    texts.write_text("hello world\n", encoding="utf-8")
    out = tmp_path / "vectors.npy"
    code, _, err = cli("embed", "-m", tiny_model, "-i", texts, "-o", out, "--max-length", "4096")
    assert code == 2 and "reads at most 128 tokens" in err and "--max-length 128 or less" in err
    assert not out.exists()
    code, _, err = cli("similarity", "-m", tiny_model, "-i", texts, "--matrix", "--max-length", "129")
    assert code == 2 and "--max-length 129" in err
    code, _, _ = cli("embed", "-m", tiny_model, "-i", texts, "-o", out, "--max-length", "128")
    assert code == 0 and out.is_file()

"""Failures found late by an adversarial pass: each one was a traceback, a silent change or a
deleted file, and is now a clear error (exit code 2) before the work starts."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from bertkit.core.errors import BertkitError


def _checkpoint(folder: Path, state) -> Path:
    """A checkpoint folder with whole weights and the given trainer_state.json content."""
    import torch
    from safetensors.torch import save_file

    folder.mkdir(parents=True)
    save_file({"w": torch.zeros(2)}, str(folder / "model.safetensors"))
    (folder / "trainer_state.json").write_text(json.dumps(state), encoding="utf-8")
    return folder


def test_lock_in_a_place_that_cannot_be_written_is_a_clear_error():
    from bertkit.core.outputs.lock import OutputLock

    with pytest.raises(BertkitError, match="cannot write /proc/bertkit-model"):
        OutputLock(Path("/proc/bertkit-model")).acquire()


def test_torch_save_on_a_full_disk_is_a_write_error(tmp_path, monkeypatch):
    from bertkit.core.outputs import files

    torch_says = RuntimeError("[enforce fail at inline_container.cc:672] . unexpected pos 487744 vs 487632")
    monkeypatch.setattr(files, "_nearly_full", lambda path: True)
    failed = files.writing_failed(torch_says, tmp_path / "run.partial", "Kept.")
    assert (
        failed is not None and str(failed) == f"cannot write {tmp_path / 'run.partial'}: No space left on device. Kept."
    )
    monkeypatch.setattr(files, "_nearly_full", lambda path: False)
    assert "the write failed" in str(files.writing_failed(torch_says, tmp_path))
    assert files.writing_failed(RuntimeError("some other bug"), tmp_path) is None


def test_a_trainer_state_without_a_step_is_not_a_complete_checkpoint(tmp_path):
    from bertkit.core.checkpoints import is_complete, last_complete

    _checkpoint(tmp_path / "checkpoint-2", {"global_step": 2, "log_history": []})
    assert is_complete(tmp_path / "checkpoint-2")
    for step, state in ((4, {}), (6, [1]), (8, {"global_step": None})):
        _checkpoint(tmp_path / f"checkpoint-{step}", state)
        assert not is_complete(tmp_path / f"checkpoint-{step}")
    found, broken = last_complete(tmp_path)
    assert found.name == "checkpoint-2" and len(broken) == 3


def test_resume_refuses_files_of_yours_in_the_work_directory(tmp_path):
    """A finished run clears OUTPUT.partial: with --resume, a notes file there was deleted."""
    from bertkit.core.checkpoints import RUN_MARKER
    from bertkit.training.run_dir import check_dirs

    work = tmp_path / "model.partial"
    _checkpoint(work / "checkpoint-3", {"global_step": 3})
    (work / RUN_MARKER).write_text("bertkit run\n", encoding="utf-8")
    (work / "notes.txt").write_text("mine\n", encoding="utf-8")
    with pytest.raises(BertkitError, match=r"holds files bertkit did not write \(notes.txt\)"):
        check_dirs(tmp_path / "model", work, overwrite=False, resume=True, inputs=[])
    assert (work / "notes.txt").read_text(encoding="utf-8") == "mine\n"
    (work / "notes.txt").unlink()
    assert check_dirs(tmp_path / "model", work, overwrite=False, resume=True, inputs=[]).name == "checkpoint-3"


def test_a_run_whose_only_checkpoint_was_cut_short_leaves_no_partial(tmp_path):
    """A full disk during the first checkpoint: the message says nothing was kept, and so it is."""
    from bertkit.training.run_dir import discard_if_empty

    work = tmp_path / "model.partial"
    (work / "checkpoint-1").mkdir(parents=True)
    (work / "checkpoint-1" / "config.json").write_text("{}", encoding="utf-8")
    discard_if_empty(work)
    assert not work.exists()
    _checkpoint(work / "checkpoint-2", {"global_step": 2})
    discard_if_empty(work)
    assert work.is_dir()


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


# ---------------------------------------------------------------- found by the same pass, fixed after it


def test_a_config_that_is_a_folder_empty_or_not_utf8_says_so(cli, tmp_path):
    from helpers.checks import assert_refused

    code, _, err = cli("config", "show", "-c", tmp_path)
    assert_refused(code, err, f"{tmp_path} is a folder")
    empty = tmp_path / "empty.yaml"
    empty.write_text("\n")
    code, _, err = cli("config", "show", "-c", empty)
    assert_refused(code, err, f"{empty}: the config is empty")
    latin = tmp_path / "latin.yaml"
    latin.write_bytes(b"task: classify\n# caf\xe9\n")
    code, _, err = cli("config", "show", "-c", latin)
    assert_refused(code, err, f"{latin}:2: not UTF-8 text")
    listed = tmp_path / "listed.yaml"
    listed.write_text("task: [classify]\n")
    code, _, err = cli("train", "classify", "-c", listed)
    assert_refused(code, err, f"{listed}:1: task must be one name")


def test_a_csv_whose_header_line_is_blank_is_an_error_not_a_shift(tmp_path):
    import pytest

    from bertkit.core.data.readers import located_records
    from bertkit.core.errors import BertkitError

    path = tmp_path / "in.csv"
    path.write_text("\ntext\nhello\n")
    with pytest.raises(BertkitError, match="in.csv:1: the header line is blank"):
        list(located_records(str(path), keep_blank=True))


def test_output_extensions_that_say_no_format_are_refused_before_work(cli, tmp_path):
    from helpers.checks import assert_refused

    source = tmp_path / "in.txt"
    source.write_text("a text\n")
    code, _, err = cli("predict", "-m", tmp_path / "no-model", "-i", source, "-o", tmp_path / "p.xyz")
    assert_refused(code, err, "cannot tell the format from the extension .xyz")
    code, _, err = cli(
        "similarity", "-m", tmp_path / "no-model", "-i", source, "--matrix", "--heatmap", tmp_path / "h.txt"
    )
    assert_refused(code, err, "the heatmap is a PNG picture")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.txt"]


def test_home_in_config_paths_is_expanded(tmp_path):
    import os

    from bertkit.config import load_config

    cfg = load_config(
        None, ["data.train=~/d/train.csv", "output_dir=~/runs/x", "model.name=~/models/m"], task="classify"
    )
    home = os.path.expanduser("~")
    assert cfg.data.train.path == f"{home}/d/train.csv" and cfg.output_dir == f"{home}/runs/x"
    assert cfg.model.name == f"{home}/models/m"


def test_an_empty_input_path_and_a_missing_model_say_so(cli, tmp_path):
    from helpers.checks import assert_refused

    code, _, err = cli("predict", "-m", tmp_path / "nope", "-i", "")
    assert_refused(code, err, "an empty path")
    source = tmp_path / "in.txt"
    source.write_text("a text\n")
    code, _, err = cli("predict", "-m", tmp_path / "nope", "-i", source)
    assert_refused(code, err, "not found. Give a directory written by `bertkit train`")


@pytest.mark.slow
def test_evaluate_on_missing_columns_names_the_option_to_set(cli, tmp_path, classify_bundle):
    from helpers.checks import assert_refused

    data = tmp_path / "d.csv"
    data.write_text("sentence,label\ngood,positive\n")
    code, _, err = cli("evaluate", "-m", classify_bundle, "-d", data, "-o", tmp_path / "ev")
    assert_refused(code, err, "no column 'text' (set by --text-column)")


def test_old_mac_line_breaks_are_an_error_not_one_record(cli, tmp_path, head_models):
    from helpers.checks import assert_refused

    from bertkit.core.data.readers import located_records

    mac = tmp_path / "mac.txt"
    mac.write_bytes(b"great film\rawful film\rfine film\r")
    code, _, err = cli("predict", "-m", head_models["ner"], "-i", mac)
    assert_refused(code, err, "carriage return alone (old Mac line breaks)")
    inside = tmp_path / "inside.txt"
    inside.write_bytes(b"a lone \r inside\nsecond\n")
    assert [r["text"] for _, r in located_records(str(inside))] == ["a lone \r inside", "second"]
    squad = tmp_path / "mac.json"
    squad.write_bytes(b'{"data": [\r{"text": "a"}\r]}')
    assert [r["text"] for _, r in located_records(str(squad))] == ["a"]  # JSON: a CR is only white space

"""`bertkit tokenizer train` (bertkit/core/tokenizer_training.py): where it writes, refused before any learning."""

import pytest
from helpers.checks import assert_refused


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

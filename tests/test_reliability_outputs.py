"""Nothing the user wrote is lost: --overwrite replaces only what bertkit wrote, outputs are whole
or absent, follow the umask, go through symbolic links and into FIFOs, and one run at a time
writes an output."""

import json
import os
import signal
import stat
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from checks import assert_refused

from bertkit import outputs
from bertkit.errors import BertkitError


def train_config(tmp_path, model, train, out, extra=""):
    path = tmp_path / "run.yaml"
    path.write_text(
        f"task: classify\nmodel:\n  name: {model}\n  max_length: 32\n"
        f"data:\n  train: {train}\ntrain:\n  epochs: 1\n  max_steps: 2\n  eval_strategy: 'no'\n"
        f"output_dir: {out}\n{extra}"
    )
    return path


# ---------------------------------------------------------------- --overwrite


def test_overwrite_refuses_a_directory_bertkit_did_not_write(cli, tmp_path, tiny_model, easy_data):
    sandbox = tmp_path / "sandbox"
    sandbox.mkdir()
    (sandbox / "train.csv").write_text(easy_data["train"].read_text())
    config = train_config(tmp_path, tiny_model, sandbox / "train.csv", sandbox)
    code, _, err = cli("train", "classify", "-c", config, "--overwrite")
    assert_refused(code, err, "--overwrite", "sandbox")
    assert (sandbox / "train.csv").read_text() == easy_data["train"].read_text()
    other = tmp_path / "other"
    other.mkdir()
    (other / "notes.txt").write_text("mine")
    code, _, err = cli("train", "classify", "-c", config, "-o", other, "--overwrite")
    assert_refused(code, err, "was not written by bertkit")
    assert (other / "notes.txt").read_text() == "mine"


def test_overwrite_refuses_the_current_home_and_data_directories(cli, tmp_path, tiny_model, easy_data, monkeypatch):
    config = train_config(tmp_path, tiny_model, easy_data["train"], tmp_path / "out")
    monkeypatch.chdir(tmp_path)
    code, _, err = cli("train", "classify", "-c", config, "-o", ".", "--overwrite")
    assert_refused(code, err, "is the current directory")
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    code, _, err = cli("train", "classify", "-c", config, "-o", home, "--overwrite")
    assert_refused(code, err, "home directory")
    # a directory that looks like a bundle but holds the run's own data is refused too
    holder = tmp_path / "holder"
    holder.mkdir()
    (holder / "bertkit.json").write_text("{}")
    data = holder / "train.csv"
    data.write_text(easy_data["train"].read_text())
    code, _, err = cli("train", "classify", "-c", config, "-o", holder, "--overwrite", "--set", f"data.train={data}")
    assert_refused(code, err, "an input of this run")
    assert data.exists()


def test_overwrite_replaces_a_bundle_but_not_files_added_to_it(cli, tmp_path, tiny_model, easy_data):
    out = tmp_path / "model"
    config = train_config(tmp_path, tiny_model, easy_data["train"], out)
    assert cli("train", "classify", "-c", config)[0] == 0
    manifest = json.loads((out / outputs.MANIFEST).read_text())
    assert "bertkit.json" in manifest["files"] and "model.safetensors" in manifest["files"]
    # an evaluation bertkit wrote inside the bundle does not stop a replacement
    assert cli("evaluate", "-m", out, "-d", easy_data["test"])[0] == 0
    assert (out / "eval-test" / outputs.MANIFEST).is_file()
    code, _, err = cli("train", "classify", "-c", config, "--overwrite")
    assert code == 0, err
    (out / "my-notes.txt").write_text("keep me")
    code, _, err = cli("train", "classify", "-c", config, "--overwrite")
    assert_refused(code, err, "holds files bertkit did not write", "my-notes.txt")
    assert (out / "my-notes.txt").read_text() == "keep me" and (out / "bertkit.json").is_file()


def test_overwrite_of_evaluate_and_tokenizer_outputs(cli, tmp_path, classify_bundle, easy_data):
    target = tmp_path / "scores"
    target.mkdir()
    (target / "precious.csv").write_text("x")
    code, _, err = cli("evaluate", "-m", classify_bundle, "-d", easy_data["test"], "-o", target, "--overwrite")
    assert_refused(code, err, "was not written by bertkit")
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("\n".join(f"word{i} and more words here" for i in range(200)))
    code, _, err = cli("tokenizer", "train", "-i", corpus, "-o", tmp_path, "--vocab-size", "60", "--overwrite")
    assert_refused(code, err, "an input of this run")


# ---------------------------------------------------------------- result files


def test_results_follow_the_umask_and_keep_an_existing_mode(cli, tmp_path, classify_bundle):
    source = tmp_path / "in.txt"
    source.write_text("great film\n")
    old = os.umask(0o002)
    try:
        out = tmp_path / "pred.jsonl"
        assert cli("predict", "-m", classify_bundle, "-i", source, "-o", out)[0] == 0
        assert stat.S_IMODE(out.stat().st_mode) == 0o664
        out.chmod(0o600)
        assert cli("predict", "-m", classify_bundle, "-i", source, "-o", out)[0] == 0
        assert stat.S_IMODE(out.stat().st_mode) == 0o600  # replacing a file keeps its mode
        staged = outputs.staging_dir(tmp_path / "bundle")
        assert stat.S_IMODE(staged.stat().st_mode) == 0o775
    finally:
        os.umask(old)


def test_symlink_output_writes_through_the_link(cli, tmp_path, classify_bundle):
    source = tmp_path / "in.txt"
    source.write_text("great film\nawful film\n")
    real = tmp_path / "real" / "pred.jsonl"
    real.parent.mkdir()
    real.write_text("old\n")
    link = tmp_path / "link.jsonl"
    link.symlink_to(real)
    code, _, err = cli("predict", "-m", classify_bundle, "-i", source, "-o", link)
    assert code == 0, err
    assert link.is_symlink() and len(real.read_text().splitlines()) == 2


def test_fifo_output_is_written_into(cli, tmp_path, classify_bundle):
    source = tmp_path / "in.txt"
    source.write_text("great film\nawful film\n")
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    received = []
    reader = threading.Thread(target=lambda: received.append(fifo.read_text()))
    reader.start()
    code, _, err = cli("predict", "-m", classify_bundle, "-i", source, "-o", fifo)
    reader.join(timeout=30)
    assert code == 0, err
    assert stat.S_ISFIFO(fifo.stat().st_mode) and len(received[0].splitlines()) == 2


def test_unwritable_outputs_fail_before_any_work(cli, tmp_path, classify_bundle, monkeypatch):
    source = tmp_path / "in.txt"
    source.write_text("great film\n")
    from bertkit import bundle

    loaded = []
    real_open = bundle.Bundle.load_model
    monkeypatch.setattr(bundle.Bundle, "load_model", lambda *a, **k: loaded.append(1) or real_open(*a, **k))
    for target, needle in ((tmp_path, "is a directory"), ("/proc/bertkit/x.jsonl", "cannot write"), (source, "input")):
        code, _, err = cli("predict", "-m", classify_bundle, "-i", source, "-o", target)
        assert_refused(code, err, needle)
    assert not loaded and source.read_text() == "great film\n"
    code, _, err = cli("embed", "-m", classify_bundle, "-i", source, "-o", tmp_path / "sub")
    assert code == 2 and ".npy" in err


def test_a_full_disk_leaves_nothing_behind(cli, tmp_path, classify_bundle, monkeypatch):
    import errno

    source = tmp_path / "in.txt"
    source.write_text("great film\n" * 5)

    def full(self, record):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(outputs.RecordWriter, "write", full)
    code, _, err = cli("predict", "-m", classify_bundle, "-i", source, "-o", tmp_path / "pred.jsonl")
    assert_refused(code, err, "No space left on device", "Nothing was written")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.txt"]


def test_leftovers_of_a_killed_writer_are_swept(tmp_path):
    dead = 2**22 + 12345  # above the usual pid_max: no such process
    assert not outputs.pid_alive(dead)
    (tmp_path / f".pred.jsonl.tmp-{dead}-abc").write_text("half")
    (tmp_path / f".model.tmp-{dead}-xyz").mkdir()
    alive = tmp_path / f".pred.jsonl.tmp-{os.getppid()}-def"
    alive.write_text("someone else's, still running")
    with outputs.atomic_text(str(tmp_path / "pred.jsonl")) as handle:
        handle.write("new\n")
    outputs.staging_dir(tmp_path / "model")
    names = sorted(p.name for p in tmp_path.iterdir())
    assert f".pred.jsonl.tmp-{dead}-abc" not in names and f".model.tmp-{dead}-xyz" not in names
    assert alive.exists() and (tmp_path / "pred.jsonl").read_text() == "new\n"


def test_sigterm_during_predict_leaves_no_temporary_file(tmp_path, classify_bundle):
    out = tmp_path / "pred.jsonl"
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    process = subprocess.Popen(
        [sys.executable, "-m", "bertkit", "predict", "-m", str(classify_bundle), "-i", "-", "-o", str(out)],
        stdin=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
    )
    process.stdin.write(b"great film\n" * 10)
    process.stdin.flush()
    deadline = time.time() + 60
    while time.time() < deadline and not list(tmp_path.glob(".pred.jsonl.tmp-*")):
        time.sleep(0.1)
    assert list(tmp_path.glob(".pred.jsonl.tmp-*")), "predict never opened its output"
    time.sleep(1.0)
    process.send_signal(signal.SIGTERM)
    _, err = process.communicate(timeout=60)
    assert process.returncode == 128 + signal.SIGTERM, err.decode()
    assert "interrupted" in err.decode() and "Traceback" not in err.decode()
    assert list(tmp_path.iterdir()) == []


# ---------------------------------------------------------------- one run at a time


def test_a_running_job_locks_its_output(cli, tmp_path, tiny_model, easy_data):
    out = tmp_path / "model"
    config = train_config(tmp_path, tiny_model, easy_data["train"], out)
    lock = tmp_path / ".model.lock"
    lock.write_text(json.dumps({"pid": os.getppid(), "host": outputs._host(), "started": "earlier"}))
    code, _, err = cli("train", "classify", "-c", config, "--overwrite")
    assert_refused(code, err, "another bertkit run is writing", str(os.getppid()))
    assert not Path(str(out) + ".partial").exists()
    # the lock of a process that is gone is taken over, and released at the end
    lock.write_text(json.dumps({"pid": 2**22 + 54321, "host": outputs._host(), "started": "earlier"}))
    code, _, err = cli("train", "classify", "-c", config)
    assert code == 0, err
    assert "taking over the lock" in err and not lock.exists() and (out / "bertkit.json").is_file()


def test_lock_of_another_host_is_respected(tmp_path):
    lock = tmp_path / ".model.lock"
    lock.write_text(json.dumps({"pid": 2**22 + 1, "host": "elsewhere.example", "started": "earlier"}))
    with pytest.raises(BertkitError, match="elsewhere.example"):
        outputs.OutputLock(tmp_path / "model").acquire()
    lock.unlink()
    with outputs.OutputLock(tmp_path / "model") as held:
        assert held.held and lock.exists()
        with pytest.raises(BertkitError, match="another bertkit run"):
            outputs.OutputLock(tmp_path / "model").acquire()
    assert not lock.exists()

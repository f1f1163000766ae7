"""bertkit/core/outputs/: nothing the user wrote is lost. --overwrite replaces only what bertkit
wrote; outputs are whole or absent, follow the umask, go through symbolic links and into FIFOs;
one run at a time writes an output; a folder bertkit did not make, the root or a link loop as an
output are clean errors; JSON lines and CoNLL rows stay one record a line."""

import json
import os
import shutil
import signal
import stat
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from helpers.checks import assert_refused, write_config

from bertkit.core import outputs
from bertkit.core.errors import BertkitError


def train_config(tmp_path, model, train, out, extra=""):
    steps = "train:\n  epochs: 1\n  max_steps: 2\n  eval_strategy: 'no'\n"
    return write_config(tmp_path, model, train, out, steps + extra)


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
    assert_refused(code, err, "an input of this command")
    assert data.exists()


@pytest.mark.slow
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


@pytest.mark.slow
def test_overwrite_of_evaluate_and_tokenizer_outputs(cli, tmp_path, classify_bundle, easy_data):
    target = tmp_path / "scores"
    target.mkdir()
    (target / "precious.csv").write_text("x")
    code, _, err = cli("evaluate", "-m", classify_bundle, "-d", easy_data["test"], "-o", target, "--overwrite")
    assert_refused(code, err, "was not written by bertkit")
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("\n".join(f"word{i} and more words here" for i in range(200)))
    code, _, err = cli("tokenizer", "train", "-i", corpus, "-o", tmp_path, "--vocab-size", "60", "--overwrite")
    assert_refused(code, err, "an input of this command")


# ---------------------------------------------------------------- result files


@pytest.mark.slow
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


@pytest.mark.slow
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


@pytest.mark.slow
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


@pytest.mark.slow
def test_unwritable_outputs_fail_before_any_work(cli, tmp_path, classify_bundle, monkeypatch):
    source = tmp_path / "in.txt"
    source.write_text("great film\n")
    from bertkit.tasks import bundle

    loaded = []
    real_open = bundle.Bundle.load_model
    monkeypatch.setattr(bundle.Bundle, "load_model", lambda *a, **k: loaded.append(1) or real_open(*a, **k))
    for target, needle in ((tmp_path, "is a directory"), ("/proc/bertkit/x.jsonl", "cannot write"), (source, "input")):
        code, _, err = cli("predict", "-m", classify_bundle, "-i", source, "-o", target)
        assert_refused(code, err, needle)
    assert not loaded and source.read_text() == "great film\n"
    code, _, err = cli("embed", "-m", classify_bundle, "-i", source, "-o", tmp_path / "sub")
    assert code == 2 and ".npy" in err


@pytest.mark.slow
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


@pytest.mark.slow
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


@pytest.mark.slow
def test_a_running_job_locks_its_output(cli, tmp_path, tiny_model, easy_data):
    out = tmp_path / "model"
    config = train_config(tmp_path, tiny_model, easy_data["train"], out)
    lock = tmp_path / ".model.lock"
    lock.write_text(json.dumps({"pid": os.getppid(), "host": outputs.host(), "started": "earlier"}))
    code, _, err = cli("train", "classify", "-c", config, "--overwrite")
    assert_refused(code, err, "another bertkit run is writing", str(os.getppid()))
    assert not Path(str(out) + ".partial").exists()
    # the lock of a process that is gone is taken over, and released at the end
    lock.write_text(json.dumps({"pid": 2**22 + 54321, "host": outputs.host(), "started": "earlier"}))
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


# ---------------------------------------------------------------- what --overwrite may replace, continued


def test_overwrite_protects_globbed_data_and_the_base_model(cli, tmp_path, tiny_model, easy_data):
    holder = tmp_path / "holder"
    holder.mkdir()
    (holder / "bertkit.json").write_text("{}")
    (holder / "part1.csv").write_text(easy_data["train"].read_text())
    config = train_config(tmp_path, tiny_model, holder / "*.csv", holder)
    code, _, err = cli("train", "classify", "-c", config, "--overwrite")
    assert_refused(code, err, "an input of this command", "part1.csv")
    assert (holder / "part1.csv").exists()
    # the model a run starts from is an input too
    config = train_config(tmp_path, tiny_model, easy_data["train"], tiny_model)
    code, _, err = cli("train", "classify", "-c", config, "--overwrite")
    assert code == 2 and (Path(tiny_model) / "config.json").exists(), err


@pytest.mark.slow
def test_overwrite_of_a_bundle_without_manifest_keeps_unknown_files(cli, tmp_path, tiny_model, easy_data):
    """A bundle from before manifests is recognised by its own files; anything else in it is the user's."""
    out = tmp_path / "model"
    config = train_config(tmp_path, tiny_model, easy_data["train"], out)
    assert cli("train", "classify", "-c", config)[0] == 0
    (out / outputs.MANIFEST).unlink()
    (out / "reliability.png").unlink()  # as bundles from before manifests: they had no reliability diagram
    (out / "train.csv").write_text("mine")
    code, _, err = cli("train", "classify", "-c", config, "--overwrite")
    assert_refused(code, err, "holds files bertkit did not write", "train.csv")
    (out / "train.csv").unlink()
    code, _, err = cli("train", "classify", "-c", config, "--overwrite")
    assert code == 0, err


@pytest.mark.slow
def test_overwrite_replaces_only_the_same_kind_of_output(cli, tmp_path, classify_bundle, easy_data):
    """evaluate -o BUNDLE --overwrite would replace a model with a metrics folder: refused."""
    copy = tmp_path / "model"

    shutil.copytree(classify_bundle, copy)
    code, _, err = cli("evaluate", "-m", classify_bundle, "-d", easy_data["test"], "-o", copy, "--overwrite")
    assert_refused(code, err, "holds a bertkit bundle", "evaluation")
    assert (copy / "model.safetensors").exists()


@pytest.mark.slow
def test_debris_of_a_killed_writer_does_not_block_overwrite(cli, tmp_path, classify_bundle, easy_data):
    target = tmp_path / "scores"
    assert cli("evaluate", "-m", classify_bundle, "-d", easy_data["test"], "-o", target)[0] == 0
    dead = 2**22 + 4242
    (target / f".metrics.json.tmp-{dead}-abc").write_text("half")
    code, _, err = cli("evaluate", "-m", classify_bundle, "-d", easy_data["test"], "-o", target, "--overwrite")
    assert code == 0, err
    (target / ".metrics.json.tmp-123-notapid-of-ours").write_text("x")  # a pid that may be alive: kept
    (target / "mine.txt").write_text("x")
    code, _, err = cli("evaluate", "-m", classify_bundle, "-d", easy_data["test"], "-o", target, "--overwrite")
    assert_refused(code, err, "mine.txt")


def test_every_file_of_a_published_bundle_follows_the_umask(tmp_path):
    old = os.umask(0o022)
    try:
        with outputs.staged_dir(tmp_path / "bundle", False, "bundle") as staged:
            weights = staged / "model.safetensors"
            weights.write_bytes(b"x")
            weights.chmod(0o600)  # as safetensors writes it
            (staged / "1_Pooling").mkdir(mode=0o700)
            (staged / "1_Pooling" / "config.json").write_text("{}")
        final = tmp_path / "bundle"
        assert stat.S_IMODE((final / "model.safetensors").stat().st_mode) == 0o644
        assert stat.S_IMODE((final / "1_Pooling").stat().st_mode) == 0o755
    finally:
        os.umask(old)


# ---------------------------------------------------------------- paths that cannot be outputs


@pytest.mark.slow
def test_outputs_inside_the_model_or_under_a_file_are_refused(cli, tmp_path, classify_bundle, easy_data):
    source = tmp_path / "in.txt"
    source.write_text("great film\n")
    before = (Path(classify_bundle) / "config.json").read_bytes()
    for target in (Path(classify_bundle) / "config.json", Path(classify_bundle) / "new.jsonl"):
        code, _, err = cli("predict", "-m", classify_bundle, "-i", source, "-o", target)
        assert_refused(code, err, "an input of this command")
    assert (Path(classify_bundle) / "config.json").read_bytes() == before
    assert not (Path(classify_bundle) / "new.jsonl").exists()
    context = tmp_path / "context.txt"
    context.write_text("Paris is the capital of France.")
    code, _, err = cli(
        "predict", "-m", classify_bundle, "--question", "capital?", "--context-file", context, "-o", context
    )
    assert_refused(code, err, "input")
    assert context.read_text() == "Paris is the capital of France."
    under_file = source / "sub"
    for command in (
        ("predict", "-m", classify_bundle, "-i", source, "-o", under_file / "p.jsonl"),
        ("evaluate", "-m", classify_bundle, "-d", easy_data["test"], "-o", under_file),
        ("train", "classify", "-c", train_config(tmp_path, classify_bundle, easy_data["train"], under_file)),
    ):
        code, _, err = cli(*command)
        assert_refused(code, err, "is a file, not a folder")
    # a refused output leaves no folder it made for the check
    code, _, err = cli("predict", "-m", classify_bundle, "-i", source, "-o", "/proc/x/y.jsonl")
    assert code == 2
    made = tmp_path / "new" / "deeper"
    code, _, err = cli("predict", "-m", classify_bundle, "-i", tmp_path / "missing.txt", "-o", made / "p.jsonl")
    assert_refused(code, err, "not found")
    assert not (tmp_path / "new").exists()


@pytest.mark.slow
def test_missing_or_damaged_inputs_are_clear_errors(cli, tmp_path, classify_bundle):
    fake = tmp_path / "texts.txt.gz"
    fake.write_bytes(b"not gzip at all")
    for command in ("predict", "embed"):
        for source, needle in ((tmp_path / "missing.txt", "not found"), (fake, "Not a gzipped file")):
            out = tmp_path / ("out.npy" if command == "embed" else "out.jsonl")  # predict refuses .npy itself
            code, _, err = cli(command, "-m", classify_bundle, "-i", source, "-o", out)
            assert_refused(code, err, needle)
    surrogate = tmp_path / "bad.jsonl"
    surrogate.write_text('{"text": "fine"}\n{"text": "half \\ud800 a pair"}\n')
    code, _, err = cli("predict", "-m", classify_bundle, "-i", surrogate)
    assert_refused(code, err, f"{surrogate}:2", "surrogate")


def test_a_library_reporting_a_full_disk_in_words_is_a_clear_error():
    class SafetensorError(Exception):
        pass

    err = SafetensorError('Error while serializing: IoError(Os { code: 28, kind: StorageFull, message: "..." })')
    assert "No space left on device" in str(outputs.writing_failed(err, "out.partial"))
    assert outputs.writing_failed(ValueError("bad value"), "x") is None


# ---------------------------------------------------------------- the lock, continued


def test_an_unreadable_lock_is_held_until_it_is_old(tmp_path):
    lock = tmp_path / ".model.lock"
    lock.write_text("")  # a run that is creating its lock right now, or a damaged one
    with pytest.raises(BertkitError, match="cannot be read"):
        outputs.OutputLock(tmp_path / "model").acquire()
    old = time.time() - outputs.LOCK_UNREADABLE_AFTER - 5
    os.utime(lock, (old, old))
    with outputs.OutputLock(tmp_path / "model") as held:
        assert held.held and json.loads(lock.read_text())["pid"] == os.getpid()


def test_the_lock_is_whole_when_it_appears(tmp_path, monkeypatch):
    """Another run never sees an empty lock: it is written beside and linked into place."""
    seen = []
    real_link = os.link

    def watch(source, target, **kwargs):
        seen.append(Path(source).read_text())
        return real_link(source, target, **kwargs)

    monkeypatch.setattr(os, "link", watch)
    with outputs.OutputLock(tmp_path / "model"):
        pass
    assert seen and json.loads(seen[0])["pid"] == os.getpid()


@pytest.mark.slow
def test_ctrl_c_says_it_was_interrupted(tmp_path, classify_bundle):
    out = tmp_path / "pred.jsonl"
    process = subprocess.Popen(
        [sys.executable, "-m", "bertkit", "predict", "-m", str(classify_bundle), "-i", "-", "-o", str(out)],
        stdin=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env={**os.environ, "HF_HUB_OFFLINE": "1"},
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    process.stdin.write(b"great film\n" * 10)
    process.stdin.flush()
    deadline = time.time() + 60
    while time.time() < deadline and not list(tmp_path.glob(".pred.jsonl.tmp-*")):
        time.sleep(0.1)
    time.sleep(1.0)
    process.send_signal(signal.SIGINT)
    _, err = process.communicate(timeout=60)
    assert process.returncode == 130, err.decode()
    assert "interrupted" in err.decode() and "Traceback" not in err.decode()
    assert list(tmp_path.iterdir()) == []


def test_what_was_being_deleted_is_swept_never_put_back(tmp_path):
    """A folder deleted as trash (`files.discard`) and cut short leaves `.NAME.trash-PID-*`: swept,
    never restored as NAME (an old directory moved aside whole, `.NAME.old-PID`, is)."""
    from bertkit.core.outputs import files

    half = tmp_path / ".best.trash-999999999-0"  # a half-deleted bundle of a process that no longer runs
    half.mkdir()
    (half / "config.json").write_text("{}")
    files.recover_dir(tmp_path / "best")
    assert not (tmp_path / "best").exists()
    files.sweep_stale(tmp_path, "best")
    assert not half.exists()
    (tmp_path / "gone").mkdir()
    (tmp_path / "gone" / "a.txt").write_text("x")
    files.discard(tmp_path / "gone")
    assert list(tmp_path.iterdir()) == []


def test_a_partial_folder_a_run_did_not_make_is_never_cleared(tmp_path):
    """`OUT.partial` without bertkit's run marker is someone else's (another trainer's output, say):
    its `checkpoint-500/` and `runs/` are not a run's debris, with or without --overwrite or --resume."""
    from bertkit.training.run_dir import check_dirs

    final, work = tmp_path / "out", tmp_path / "out.partial"
    (work / "checkpoint-500").mkdir(parents=True)
    (work / "checkpoint-500" / "weights.bin").write_text("mine")
    (work / "runs").mkdir()
    (work / "runs" / "events.out.tfevents.1").write_text("mine")
    for overwrite in (False, True):
        with pytest.raises(BertkitError, match="holds files bertkit did not write"):
            check_dirs(final, work, overwrite, False, [])
    with pytest.raises(BertkitError, match="was not made by a bertkit run"):
        check_dirs(final, work, False, True, [])
    assert (work / "checkpoint-500" / "weights.bin").read_text() == "mine"
    assert (work / "runs" / "events.out.tfevents.1").read_text() == "mine"
    (work / "checkpoint-500" / "weights.bin").unlink()
    (work / "checkpoint-500").rmdir()
    (work / "runs" / "events.out.tfevents.1").unlink()
    (work / "runs").rmdir()
    assert check_dirs(final, work, False, False, []) is None  # an empty folder is nobody's work
    assert not work.exists()


def test_a_partial_folder_that_is_a_link_is_refused(tmp_path):
    from bertkit.training.run_dir import check_dirs

    mine = tmp_path / "mine"
    (mine / "runs").mkdir(parents=True)
    (mine / "runs" / "notes.txt").write_text("mine")
    (tmp_path / "out.partial").symlink_to(mine)
    for overwrite, resume in ((False, False), (True, False), (False, True)):
        with pytest.raises(BertkitError, match="is a symbolic link"):
            check_dirs(tmp_path / "out", tmp_path / "out.partial", overwrite, resume, [])
    assert (mine / "runs" / "notes.txt").read_text() == "mine"


def test_the_root_as_output_directory_is_a_clean_error(cli, tmp_path, tiny_model, easy_data):
    config = tmp_path / "run.yaml"
    config.write_text(
        f"task: classify\nmodel:\n  name: {tiny_model}\ndata:\n  train: {easy_data['train']}\noutput_dir: out\n"
    )
    for extra in ((), ("--overwrite",)):
        code, _, err = cli("train", "classify", "-c", config, "-o", "/", *extra)
        assert_refused(code, err, "/ is the root")


def test_a_symbolic_link_loop_as_output_is_a_clean_error(cli, tmp_path, head_models):
    from bertkit.core.outputs import atomic_text, check_output_dir

    (tmp_path / "a.jsonl").symlink_to(tmp_path / "b.jsonl")
    (tmp_path / "b.jsonl").symlink_to(tmp_path / "a.jsonl")
    texts = tmp_path / "in.txt"
    texts.write_text("alice met bruno\n")
    code, _, err = cli("predict", "-m", head_models["ner"], "-i", texts, "-o", tmp_path / "a.jsonl")
    assert_refused(code, err, "a.jsonl is a symbolic link that leads back to itself")
    with pytest.raises(BertkitError, match="leads back to itself"), atomic_text(str(tmp_path / "a.jsonl")):
        pass
    for overwrite in (False, True):
        with pytest.raises(BertkitError, match="leads back to itself"):
            check_output_dir(tmp_path / "a.jsonl", overwrite)


SEPARATORS = "great\u2028film|ok\x85next|para\u2029graph"


def test_json_lines_outputs_stay_one_line_for_every_line_reader(cli, tmp_path, tiny_model, head_models):
    """JSON leaves U+2028, U+2029 and U+0085 raw inside strings, and Python's str.splitlines (and
    older JavaScript) breaks lines there: bertkit escapes them, so each result is one line for
    any reader, and the text reads back the same."""
    texts = SEPARATORS.split("|")
    source = tmp_path / "in.txt"
    source.write_text("\n".join(texts) + "\n", encoding="utf-8")
    outputs = {
        "predict": ("predict", "-m", head_models["ner"], "-i", source, "-o", tmp_path / "p.jsonl"),
        "embed": ("embed", "-m", tiny_model, "-i", source, "-o", tmp_path / "e.jsonl"),
    }
    for name, args in outputs.items():
        code, _, err = cli(*args)
        assert code == 0, err
        written = args[-1].read_text(encoding="utf-8")
        assert len(written.splitlines()) == len(texts), name
        assert [json.loads(line)["text"] for line in written.splitlines()] == texts, name
    code, out, err = cli("tokenize", "-m", tiny_model, "-i", source, "--json")
    assert code == 0, err
    assert [json.loads(line)["text"] for line in out.splitlines()] == texts


def test_conll_output_refuses_tokens_a_row_cannot_carry(cli, tmp_path, head_models):
    """A token holding a line break or a space, or an empty one, would end or split a CoNLL row:
    the N-th sentence of the output would no longer be the N-th record of the input."""
    for tokens in (["alice", "\n", "paris"], ["new york", "x"], ["", "bob"], ["-DOCSTART-", "x"]):
        source = tmp_path / "tokens.jsonl"
        source.write_text(json.dumps({"tokens": ["fine"]}) + "\n" + json.dumps({"tokens": tokens}) + "\n")
        out = tmp_path / "out.conll"
        code, _, err = cli("predict", "-m", head_models["ner"], "-i", source, "--format", "conll", "-o", out)
        assert_refused(code, err, f"{source}:2: token", "cannot be written as a CoNLL row", "--format jsonl")
        assert not out.exists()


def test_lock_in_a_place_that_cannot_be_written_is_a_clear_error():
    from bertkit.core.outputs.lock import OutputLock

    with pytest.raises(BertkitError, match="cannot write /proc/bertkit-model"):
        OutputLock(Path("/proc/bertkit-model")).acquire()


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

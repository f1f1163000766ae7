"""A study keeps its word: it is continued only by the experiment it was started with (the same
settings, data and model content, and search space), `--overwrite` never deletes a storage the
user named, a study whose first trial was killed (`kill -9`) continues, and no credential of a
storage URL is ever printed or written.

Most tests run the whole `bertkit tune` command with `training.train` replaced by a stand-in that
scores a trial from its learning rate in no time; the kill -9 test trains for real (slow)."""

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from bertkit.core.errors import BertkitError

SPACE = "tune:\n  space:\n    train.learning_rate: {low: 1.0e-3, high: 1.0e-2, log: true}\n"


def write_config(folder: Path, tiny_model, train, text: str = SPACE, extra: str = "") -> Path:
    path = folder / "run.yaml"
    path.write_text(
        f"task: classify\nmodel:\n  name: {tiny_model}\n  max_length: 32\ndata:\n  train: {train}\n"
        # the route pinned: the space searches fine-tuning's rate, and a change that leaves few
        # examples a label (data.max_train_samples) must not turn the run to the contrastive route
        f"train:\n  epochs: 1\nclassify:\n  strategy: finetune\n{extra}{text}output_dir: {folder / 'out'}\n"
    )
    return path


@pytest.fixture(autouse=True)
def _no_collection_after_a_stand_in_trial(monkeypatch):
    """A stand-in trial holds no model to free, and a full collection after each costs ~0.3 s."""
    monkeypatch.setattr("bertkit.tuning.study.GC_AFTER_TRIAL", False)


@pytest.fixture
def quick_trials(monkeypatch):
    """Each trial scored from its learning rate, without training; the configs trials ran with."""
    ran = []

    def train(cfg, callbacks=(), progress=True, **kwargs):
        ran.append(cfg)
        rate = cfg.train.learning_rate if isinstance(cfg.train.learning_rate, float) else 1e-3
        return Path(cfg.output_dir), {"validation": {"f1_macro": round(rate * 50 + cfg.train.batch_size / 1000, 6)}}

    monkeypatch.setattr("bertkit.tuning.study.train", train)
    return ran


def stored_trials(url: str, name: str = "run") -> list:
    import optuna

    return optuna.load_study(study_name=name, storage=url).trials


def flat(text: str) -> str:
    return " ".join(text.split())


# ---------------------------------------------------------------- the experiment


@pytest.mark.parametrize(
    ("change", "shown"),
    [
        (["--set", "model.max_length=64"], "model.max_length: 32 → 64"),
        (["--set", "train.epochs=3"], "train.epochs: 1.0 → 3.0"),
        (["--set", "train.seed=7", "--set", "classify.loss=focal"], "train.seed: 42 → 7"),
        (["--set", "data.validation_split=0.2"], "data.validation_split: 0.1 → 0.2"),
        (["--set", "data.max_train_samples=100"], "data.max_train_samples: null → 100"),
    ],
)
def test_a_study_continued_with_other_settings_is_refused_naming_them(
    cli, tmp_path, tiny_model, easy_data, quick_trials, change, shown
):
    config = write_config(tmp_path, tiny_model, easy_data["train"])
    code, _, err = cli("tune", "-c", config, "--trials", "1")
    assert code == 0, err
    before = (tmp_path / "out" / "trials.json").read_text()
    code, _, err = cli("tune", "-c", config, "--trials", "1", *change)
    assert code == 2, err
    assert shown in flat(err)
    assert "--study NEW_NAME" in flat(err) and "Traceback" not in err
    assert len(stored_trials(f"sqlite:///{tmp_path / 'out' / 'study.db'}")) == 1  # no trial of the other run
    assert (tmp_path / "out" / "trials.json").read_text() == before  # its reports untouched
    if "classify.loss" in " ".join(change):
        assert "classify.loss: cross_entropy → focal" in flat(err)
    # a new study in the same storage takes the new settings; --overwrite starts the default one afresh
    code, _, err = cli("tune", "-c", config, "--trials", "1", *change, "--study", "other")
    assert code == 0, err
    code, _, err = cli("tune", "-c", config, "--trials", "1", *change, "--overwrite")
    assert code == 0, err


def test_data_count_by_their_content_not_their_path(cli, tmp_path, tiny_model, easy_data, quick_trials):
    data = tmp_path / "train.csv"
    shutil.copy(easy_data["train"], data)
    config = write_config(tmp_path, tiny_model, data)
    assert cli("tune", "-c", config, "--trials", "1")[0] == 0
    moved = tmp_path / "elsewhere" / "train.csv"  # the same data at another path (another machine)
    moved.parent.mkdir()
    shutil.copy(data, moved)
    code, _, err = cli("tune", "-c", config, "--trials", "1", "--set", f"data.train={moved}")
    assert code == 0, err
    code, _, err = cli("tune", "-c", config, "--trials", "1", "--set", f"data.validation={easy_data['test']}")
    assert code == 2 and f"data.validation.path: not set → {easy_data['test']} (sha256" in flat(err)
    lines = data.read_text().splitlines()
    data.write_text("\n".join([lines[0], *lines[2:]]) + "\n")  # one example fewer, in place
    code, _, err = cli("tune", "-c", config, "--trials", "1")
    assert code == 2
    assert f"data.train.path: {data} (content sha256" in flat(err)
    assert len(stored_trials(f"sqlite:///{tmp_path / 'out' / 'study.db'}")) == 2


def test_a_model_changed_in_place_is_another_experiment(cli, tmp_path, tiny_model, easy_data, quick_trials):
    model = tmp_path / "model"
    shutil.copytree(tiny_model, model)
    config = write_config(tmp_path, model, easy_data["train"])
    assert cli("tune", "-c", config, "--trials", "1")[0] == 0
    (model / "README.md").write_text("notes about the model")  # a note: the same model
    assert cli("tune", "-c", config, "--trials", "1")[0] == 0
    (model / "config.json").write_text((model / "config.json").read_text().replace("{", '{"note": 1,', 1))
    code, _, err = cli("tune", "-c", config, "--trials", "1")
    assert code == 2
    assert f"model.name: {model} (content sha256" in flat(err)


def test_keys_that_cannot_change_a_result_may_change(cli, tmp_path, tiny_model, easy_data, quick_trials):
    config = write_config(tmp_path, tiny_model, easy_data["train"])
    assert cli("tune", "-c", config, "--trials", "1")[0] == 0
    changes = ["train.logging_steps=3", "train.dataloader_workers=0", "data.cache=false",
               f"data.test={easy_data['test']}", "tune.random_trials=2", "tune.pruner=none", "ner.stride=8",
               "qa.doc_stride=16"]  # fmt: skip
    args = [item for change in changes for item in ("--set", change)]
    code, _, err = cli("tune", "-c", config, "--trials", "1", *args)
    assert code == 0, err
    assert len(stored_trials(f"sqlite:///{tmp_path / 'out' / 'study.db'}")) == 2


def test_a_study_from_before_experiments_were_kept_continues_with_a_note(
    cli, tmp_path, tiny_model, easy_data, quick_trials
):
    import optuna

    config = write_config(tmp_path, tiny_model, easy_data["train"])
    assert cli("tune", "-c", config, "--trials", "1")[0] == 0
    url = f"sqlite:///{tmp_path / 'out' / 'study.db'}"
    optuna.load_study(study_name="run", storage=url).set_user_attr("experiment", None)  # as an earlier bertkit left it
    code, _, err = cli("tune", "-c", config, "--trials", "1", "--set", "model.max_length=64")
    assert code == 0, err
    assert "did not record its settings" in flat(err)
    code, _, err = cli("tune", "-c", config, "--trials", "1")  # recorded now: max_length 64
    assert code == 2 and "model.max_length: 64 → 32" in flat(err)


# ---------------------------------------------------------------- the search space


@pytest.mark.parametrize(
    ("space", "shown"),
    [
        ("    train.learning_rate: {low: 1.0e-4, high: 1.0e-2, log: true}\n",
         "train.learning_rate: 0.001 to 0.01, log scale → 0.0001 to 0.01, log scale"),
        ("    train.learning_rate: {low: 1.0e-3, high: 1.0e-2, log: true}\n    train.batch_size: {choices: [8, 16]}\n",
         "train.batch_size: not searched → one of 8, 16"),
        ("    train.warmup_ratio: {low: 0.0, high: 0.2}\n",
         "train.learning_rate: 0.001 to 0.01, log scale → not searched"),
    ],
)  # fmt: skip
def test_a_study_continued_over_another_space_is_refused(
    cli, tmp_path, tiny_model, easy_data, quick_trials, space, shown
):
    config = write_config(tmp_path, tiny_model, easy_data["train"])
    assert cli("tune", "-c", config, "--trials", "1")[0] == 0
    changed = write_config(tmp_path, tiny_model, easy_data["train"], text=f"tune:\n  space:\n{space}")
    code, _, err = cli("tune", "-c", changed, "--trials", "1")
    assert code == 2
    assert shown in flat(err) and "--study NEW_NAME" in flat(err)
    assert "Traceback" not in err and "dynamic value space" not in err
    assert [t.state.name for t in stored_trials(f"sqlite:///{tmp_path / 'out' / 'study.db'}")] == ["COMPLETE"]


def test_changed_choices_are_refused_before_any_trial_fails(cli, tmp_path, tiny_model, easy_data, quick_trials):
    """Optuna itself would fail the next trial, with two tracebacks, on choices that changed."""
    first = "tune:\n  space:\n    train.batch_size: {choices: [8, 16]}\n"
    config = write_config(tmp_path, tiny_model, easy_data["train"], text=first)
    assert cli("tune", "-c", config, "--trials", "1")[0] == 0
    config = write_config(tmp_path, tiny_model, easy_data["train"], text=first.replace("16]", "32]"))
    code, _, err = cli("tune", "-c", config, "--trials", "1")
    assert code == 2 and "train.batch_size: one of 8, 16 → one of 8, 32" in flat(err)
    assert [t.state.name for t in stored_trials(f"sqlite:///{tmp_path / 'out' / 'study.db'}")] == ["COMPLETE"]


# ---------------------------------------------------------------- the output folder and the storage


def test_overwrite_keeps_a_storage_given_inside_the_output_folder(cli, tmp_path, tiny_model, easy_data, quick_trials):
    config = write_config(tmp_path, tiny_model, easy_data["train"])
    out = tmp_path / "out"
    url = f"sqlite:///{out / 'mine.db'}"
    assert cli("tune", "-c", config, "--trials", "1", "--storage", url)[0] == 0
    assert "mine.db" not in json.loads((out / ".bertkit-output.json").read_text())["files"]
    code, _, err = cli("tune", "-c", config, "--trials", "1", "--storage", url, "--overwrite")
    assert code == 0, err
    assert (out / "mine.db").is_file() and len(stored_trials(url)) == 2  # the study goes on
    assert "replaced the reports, not the study" in flat(err)
    assert len(json.loads((out / "trials.json").read_text())["trials"]) == 2
    # without --storage, the file is the user's, not bertkit's: --overwrite refuses, deleting nothing
    code, _, err = cli("tune", "-c", config, "--trials", "1", "--overwrite")
    assert code == 2 and "mine.db" in err
    assert (out / "mine.db").is_file() and len(stored_trials(url)) == 2


def test_a_folder_with_a_user_file_is_still_refused(cli, tmp_path, tiny_model, easy_data, quick_trials):
    config = write_config(tmp_path, tiny_model, easy_data["train"])
    out = tmp_path / "out"
    assert cli("tune", "-c", config, "--trials", "1")[0] == 0
    (out / "notes.txt").write_text("mine")
    for extra in ([], ["--overwrite"]):
        code, _, err = cli("tune", "-c", config, "--trials", "1", *extra)
        assert code == 2 and "notes.txt" in err
    assert (out / "notes.txt").read_text() == "mine" and (out / "study.db").is_file()


def test_a_study_whose_process_was_killed_before_its_reports_continues(
    cli, tmp_path, tiny_model, easy_data, quick_trials
):
    """What `kill -9` leaves (a manifest written before study.db existed, or before a report was,
    the study with a running trial, the trial's folder): the folder continues, and --overwrite
    replaces it; as an earlier bertkit left it too (its manifest listed nothing)."""
    import optuna

    config = write_config(tmp_path, tiny_model, easy_data["train"])
    out = tmp_path / "out"
    out.mkdir()
    (out / ".bertkit-output.json").write_text(json.dumps({"written_by": "bertkit", "kind": "tune", "files": []}))
    url = f"sqlite:///{out / 'study.db'}"
    optuna.create_study(study_name="run", storage=url, direction="maximize").ask()  # left running
    (out / "study.db-journal").write_bytes(b"")  # a write cut short
    (out / "trials.csv").write_text("number,state\n")  # a report written, the manifest not yet
    (out / ".trial.tmp-999999999-abcd" / "model").mkdir(parents=True)
    code, _, err = cli("tune", "-c", config, "--trials", "1")
    assert code == 0, err
    assert not (out / ".trial.tmp-999999999-abcd").exists()
    assert [t.state.name for t in stored_trials(url)] == ["RUNNING", "COMPLETE"]
    assert "study.db" in json.loads((out / ".bertkit-output.json").read_text())["files"]
    code, _, err = cli("tune", "-c", config, "--trials", "1", "--overwrite")
    assert code == 0, err
    assert [t.state.name for t in stored_trials(url)] == ["COMPLETE"]


@pytest.mark.slow
def test_kill_9_in_the_first_trial_leaves_a_study_that_continues(cli, tmp_path, tiny_model, easy_data):
    config = write_config(tmp_path, tiny_model, easy_data["train"])
    out = tmp_path / "out"
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "OMP_NUM_THREADS": "1"}
    command = [sys.executable, "-m", "bertkit", "tune", "-c", str(config), "--trials", "1"]
    for extra in ([], ["--overwrite"]):
        shutil.rmtree(out, ignore_errors=True)
        process = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 120
        while not list(out.glob(".trial.tmp-*")) and time.monotonic() < deadline:  # the first trial has started
            time.sleep(0.1)
        os.kill(process.pid, signal.SIGKILL)
        process.wait()
        assert list(out.glob(".trial.tmp-*")) and not (out / "trials.json").exists()
        code, _, err = cli(*command[3:], *extra)  # the study taken up again (in this process: the kill was the test)
        assert code == 0, err
        assert not list(out.glob(".trial.tmp-*"))
        states = [t.state.name for t in stored_trials(f"sqlite:///{out / 'study.db'}")]
        if extra:  # --overwrite: a new study
            assert states == ["COMPLETE"]
        else:  # the killed trial: running, or failed once its heartbeat is 2 minutes late (a loaded machine)
            assert len(states) == 2 and states[0] in ("RUNNING", "FAIL") and states[1] == "COMPLETE"
        assert (out / "best.yaml").is_file()


@pytest.mark.parametrize(
    "storage", ["sqlite://", "sqlite:///:memory:", "sqlite:///file::memory:?cache=shared&uri=true",
                "sqlite:///file:study?mode=memory&uri=true", "sqlite+pysqlite:///:memory:", "SQLite://",
                "sqlite:///file:%3Amemory%3A?cache=shared&uri=true", "sqlite:///file:x1?mode=%6Demory&cache=shared&uri=true",
                "sqlite:///%3amemory%3a", "sqlite:///file:%3amemory%3a?uri=true"],
)  # fmt: skip
def test_an_in_memory_storage_is_refused(cli, tmp_path, tiny_model, easy_data, storage):
    config = write_config(tmp_path, tiny_model, easy_data["train"])
    code, _, err = cli("tune", "-c", config, "--trials", "1", "--storage", storage)
    assert code == 2 and "in-memory SQLite database ends with this process" in flat(err)
    assert not (tmp_path / "out").exists()


# ---------------------------------------------------------------- credentials

URLS = [  # (URL, its credentials)
    ("postgresql://tune:se/cr/et@db.example/optuna", ["se/cr/et"]),
    ("postgresql://tune:s:e:c@db.example:5432/optuna", ["s:e:c"]),
    ("mysql+pymysql://tune:p%40ss%2Fw0rd@db.example/optuna", ["p%40ss%2Fw0rd", "p@ss/w0rd"]),
    ("postgresql://tune@db.example/optuna?password=hunter22&sslmode=require", ["hunter22"]),
    ("postgresql://db.example/optuna?user=tune&passwd=hunter22", ["hunter22"]),
    ("mysql+pymysql://tune:pw1234@db.example/optuna?ssl_key=k.pem&token=t0k3n&api_key=abc123",
     ["pw1234", "t0k3n", "abc123"]),
    ("postgresql://tune:pa?ss#word@db.example/optuna", ["pa?ss#word"]),
    ("postgresql://tune:p@ss@db.example/optuna", ["p@ss"]),
    ("postgresql://db.example/optuna?password=a@b1", ["a@b1"]),
    ("postgresql://db.example/optuna?sslmode=require&password=p:w@rd", ["p:w@rd"]),
]  # fmt: skip


@pytest.mark.parametrize(("url", "secrets"), URLS)
def test_no_credential_is_shown(url, secrets):
    from bertkit.tuning.storage import scrub, shown_url

    shown = shown_url(url)
    assert "db.example" in shown and "***" in shown
    assert not any(secret in shown for secret in secrets), shown
    echoed = f"(psycopg2.OperationalError) could not connect with {url!r}: bad password {secrets[-1]} for {url}"
    cleaned = scrub(echoed, url)
    assert not any(secret in cleaned for secret in secrets), cleaned
    assert "sslmode=require" in shown_url(url) if "sslmode" in url else True
    assert shown_url("tune:secret@db.example/optuna?x=1") == "***"  # not a URL: hidden whole


def test_a_missing_database_driver_names_what_to_install(monkeypatch):
    """postgresql:// opens through psycopg 3 (SQLAlchemy 2.1's default): the message names the
    postgres extra's packages, not psycopg2; other schemes name their own driver; never the password."""
    from bertkit.tuning import storage

    def no_driver(url, **kwargs):
        module = {"postgresql": "psycopg", "mysql+pymysql": "pymysql"}.get(url.split("://")[0], "psycopg2")
        raise ImportError("Failed to import DB access module") from ModuleNotFoundError(name=module)

    monkeypatch.setattr("optuna.storages.RDBStorage", no_driver)
    cases = [
        ("postgresql://tune:s3cret@db.example/optuna", "(psycopg) is not installed: pip install 'psycopg[binary]>="),
        ("mysql+pymysql://tune:s3cret@db.example/optuna", "(pymysql) is not installed: pip install pymysql"),
        ("postgresql+psycopg2://tune:s3cret@db.example/x", "(psycopg2) is not installed: pip install psycopg2-binary"),
    ]
    for url, said in cases:
        with pytest.raises(BertkitError) as caught:
            storage.open_storage(url)
        assert said in str(caught.value) and "s3cret" not in str(caught.value)


def test_a_password_holding_an_unescaped_at_is_refused_without_showing_it(cli, tmp_path, tiny_model, easy_data):
    config = write_config(tmp_path, tiny_model, easy_data["train"])
    code, out, err = cli("tune", "-c", config, "--storage", "postgresql://tune:p@ss@db.example/optuna")
    assert code == 2 and "write '@' in a password as %40" in flat(err)
    assert "p@ss" not in out + err and "ss@db" not in out + err


@pytest.mark.parametrize(("url", "secrets"), URLS[:7])
def test_every_message_and_report_hides_the_password(
    cli, tmp_path, tiny_model, easy_data, quick_trials, monkeypatch, url, secrets
):
    """The announce line, the notes, trials.json and best.yaml name the storage with its
    credentials hidden; a storage error that repeats the URL (as drivers' errors do) too."""
    from sqlalchemy.exc import OperationalError

    from bertkit.tuning import storage

    real = storage.open_storage
    local = f"sqlite:///{tmp_path / 'local.db'}"
    monkeypatch.setattr(storage, "open_storage", lambda given, attempts=5: real(local))  # the server, stood in for
    config = write_config(tmp_path, tiny_model, easy_data["train"])
    code, out, err = cli("tune", "-c", config, "--trials", "1", "--storage", url)
    assert code == 0, err
    assert "db.example" in err
    written = "".join(p.read_text() for p in (tmp_path / "out").iterdir() if p.suffix in (".json", ".yaml", ".csv"))
    for text in (out, err, written):
        assert not any(secret in text for secret in secrets)

    def unreachable(url, **kwargs):
        raise OperationalError(f"connect to {url}", None, Exception(f"connection to {url} failed for {secrets[-1]}"))

    monkeypatch.setattr(storage, "open_storage", real)
    monkeypatch.setattr("optuna.storages.RDBStorage", unreachable)
    code, out, err = cli("tune", "-c", config, "--trials", "1", "--storage", url)
    assert code == 2 and "cannot open the study storage" in flat(err)
    assert not any(secret in out + err for secret in secrets)
    with pytest.raises(BertkitError) as caught, storage.errors_hidden(url):
        raise OperationalError("SELECT 1", None, Exception(f"lost {url}"))
    assert "the study storage failed" in str(caught.value) and not any(s in str(caught.value) for s in secrets)


def test_globs_and_folders_count_by_their_content(tmp_path):
    from bertkit.tuning.experiment import _content

    corpus = tmp_path / "corpus"
    (corpus / "a").mkdir(parents=True)
    (corpus / "a" / "one.txt").write_text("first line\n")
    (corpus / "two.txt").write_text("second line\n")
    pattern, folder = str(corpus / "**" / "*.txt"), str(corpus)
    before = {p: _content(p)["sha256"] for p in (pattern, folder)}
    (corpus / "a" / "one.txt").write_text("first line, changed\n")
    assert all(_content(p)["sha256"] != before[p] for p in (pattern, folder))
    moved = tmp_path / "elsewhere"
    shutil.copytree(corpus, moved)
    assert _content(str(moved / "**" / "*.txt"))["sha256"] == _content(pattern)["sha256"]
    before = _content(folder)["sha256"]
    (corpus / "README.md").write_text("a data folder's README may be read as data: it counts")
    assert _content(folder)["sha256"] != before


def test_a_bertkit_error_repeating_the_storage_is_scrubbed_and_keeps_its_kind():
    from bertkit.tuning.storage import errors_hidden

    class Particular(BertkitError):
        exit_code = 3

    url = "postgresql://tune:hunter22@db.example/optuna?token=t0k3n"
    with pytest.raises(Particular) as caught, errors_hidden(url):
        raise Particular(f"cannot use {url} (token t0k3n)")
    assert str(caught.value) == "cannot use postgresql://tune:***@db.example/optuna?token=*** (token ***)"


def test_an_overwrite_cut_short_leaves_a_folder_that_continues(
    cli, tmp_path, tiny_model, easy_data, quick_trials, monkeypatch
):
    """--overwrite deletes each old item as trash (`.NAME.trash-PID-*`) and keeps the manifest to
    the end: killed midway, the folder is still bertkit's, and the half-deleted bundle is swept,
    never put back as best/ (a bundle without its weights)."""
    from bertkit.core.outputs import files
    from bertkit.tuning import output_folder

    config = write_config(tmp_path, tiny_model, easy_data["train"])
    out = tmp_path / "out"
    assert cli("tune", "-c", config, "--trials", "1")[0] == 0
    (out / "best").mkdir()  # a retrained bundle, as --retrain-best publishes it
    (out / "best" / "model.safetensors").write_bytes(b"weights")
    (out / "best" / ".bertkit-output.json").write_text(json.dumps({"kind": "bundle", "files": ["model.safetensors"]}))

    def killed(path, *args, **kwargs):  # as if the process died here, the weights deleted, the rest not yet
        (Path(path) / "model.safetensors").unlink()
        raise KeyboardInterrupt

    monkeypatch.setattr(files.shutil, "rmtree", killed)
    with pytest.raises(KeyboardInterrupt):
        output_folder.prepare_output(out, clear=True, kept=[], own_storage=True)
    monkeypatch.undo()
    [moved] = [p for p in out.iterdir() if p.name.startswith(".best.")]
    assert ".trash-" in moved.name and (out / ".bertkit-output.json").is_file()
    moved.rename(out / ".best.trash-999999999-0")  # what a process that no longer runs left
    quick = pytest.MonkeyPatch()
    quick.setattr(
        "bertkit.tuning.study.train", lambda cfg, **kw: (Path(cfg.output_dir), {"validation": {"f1_macro": 0.5}})
    )
    try:
        code, _, err = cli("tune", "-c", config, "--trials", "1")
    finally:
        quick.undo()
    assert code == 0, err
    assert "put back" not in err and not (out / "best").exists()
    assert not [p.name for p in out.iterdir() if ".trash-" in p.name]  # swept


def test_overwrite_keeps_a_storage_in_a_sub_folder_and_all_beside_it(
    cli, tmp_path, tiny_model, easy_data, quick_trials
):
    config = write_config(tmp_path, tiny_model, easy_data["train"])
    out = tmp_path / "out"
    url = f"sqlite:///{out / 'sub' / 'my.db'}"
    out.mkdir()
    (out / ".bertkit-output.json").write_text(json.dumps({"kind": "tune", "files": []}))  # a tune output
    (out / "sub").mkdir()  # the user's folder for the storage
    code, _, err = cli("tune", "-c", config, "--trials", "1", "--storage", url, "--study", "s3")
    assert code == 0, err
    code, _, err = cli("tune", "-c", config, "--trials", "1", "--storage", url, "--study", "s3", "--overwrite")
    assert code == 0, err
    assert (out / "sub" / "my.db").is_file() and len(stored_trials(url, "s3")) == 2  # the study goes on
    assert "Traceback" not in err
    (out / "sub" / "keep.txt").write_text("mine")  # anything the user put beside it stays too
    code, _, err = cli("tune", "-c", config, "--trials", "1", "--storage", url, "--study", "s3", "--overwrite")
    assert code == 0, err
    assert (out / "sub" / "keep.txt").read_text() == "mine" and len(stored_trials(url, "s3")) == 3


def test_bertkit_s_study_db_stays_bertkit_s_and_a_named_one_stays_the_user_s(
    cli, tmp_path, tiny_model, easy_data, quick_trials
):
    config = write_config(tmp_path, tiny_model, easy_data["train"])
    out = tmp_path / "out"
    assert cli("tune", "-c", config, "--trials", "1")[0] == 0  # study.db: bertkit's
    (out / "sub").mkdir()
    other = f"sqlite:///{out / 'sub' / 'my.db'}"
    assert cli("tune", "-c", config, "--trials", "1", "--storage", other, "--study", "s2")[0] == 0
    assert "study.db" in json.loads((out / ".bertkit-output.json").read_text())["files"]
    code, _, err = cli("tune", "-c", config, "--trials", "1", "--storage", other, "--study", "s2", "--overwrite")
    assert code == 0, err
    assert (out / "sub" / "my.db").is_file() and len(stored_trials(other, "s2")) == 2
    # the reverse: study.db named with --storage first is the user's, never deleted by --overwrite
    (tmp_path / "b").mkdir()
    config2 = write_config(tmp_path / "b", tiny_model, easy_data["train"])
    out2 = tmp_path / "b" / "out"
    named = f"sqlite:///{out2 / 'study.db'}"
    out2.mkdir()
    assert cli("tune", "-c", config2, "--trials", "1", "--storage", named)[0] == 0
    assert "study.db" not in json.loads((out2 / ".bertkit-output.json").read_text())["files"]
    code, _, err = cli("tune", "-c", config2, "--trials", "1", "--overwrite")
    assert code == 0, err
    assert (out2 / "study.db").is_file() and len(stored_trials(named)) == 2
    assert "not the study" in flat(err)
    assert "study.db" not in json.loads((out2 / ".bertkit-output.json").read_text())["files"]


def test_a_model_that_cannot_load_stops_before_the_output_and_any_trial(cli, tmp_path, easy_data, quick_trials):
    config = write_config(tmp_path, tmp_path / "no-such-model", easy_data["train"])
    code, _, err = cli("tune", "-c", config, "--trials", "1")
    assert code == 2 and "no-such-model" in err
    assert "Traceback" not in err and "Trial 0 failed" not in err
    assert not (tmp_path / "out").exists() and not quick_trials


def test_a_user_error_in_a_trial_stops_the_study_in_one_line(cli, tmp_path, tiny_model, easy_data, monkeypatch):
    def train(cfg, callbacks=(), progress=True, **kwargs):
        raise BertkitError("data.train: something only a trial finds")

    monkeypatch.setattr("bertkit.tuning.study.train", train)
    config = write_config(tmp_path, tiny_model, easy_data["train"])
    code, _, err = cli("tune", "-c", config, "--trials", "3")
    assert code == 2 and "something only a trial finds" in err
    assert "Traceback" not in err and "Trial 0 failed" not in err and "[W " not in err
    assert len(stored_trials(f"sqlite:///{tmp_path / 'out' / 'study.db'}")) == 1  # stopped at the first


def test_a_diverged_trial_fails_alone_without_a_traceback(cli, tmp_path, tiny_model, easy_data, monkeypatch):
    from bertkit.training.divergence import TrainingDiverged

    def train(cfg, callbacks=(), progress=True, **kwargs):
        raise TrainingDiverged(3, "the loss is NaN")

    monkeypatch.setattr("bertkit.tuning.study.train", train)
    config = write_config(tmp_path, tiny_model, easy_data["train"])
    code, _, err = cli("tune", "-c", config, "--trials", "2")
    assert code == 0, err
    assert "Traceback" not in err and "[W " not in err and "training diverged at step 3" in err
    assert len(stored_trials(f"sqlite:///{tmp_path / 'out' / 'study.db'}")) == 2  # the study went on


def test_retrain_best_puts_back_a_moved_bundle_before_deciding(cli, tmp_path, tiny_model, easy_data, quick_trials):
    config = write_config(tmp_path, tiny_model, easy_data["train"])
    out = tmp_path / "out"
    assert cli("tune", "-c", config, "--trials", "1")[0] == 0
    aside = out / ".best.old-999999999"  # a retrained bundle a killed publish had moved aside
    aside.mkdir()
    (aside / "model.safetensors").write_bytes(b"weights")
    (aside / "bertkit.json").write_text("{}")
    files = ["bertkit.json", "model.safetensors"]
    (aside / ".bertkit-output.json").write_text(json.dumps({"kind": "bundle", "files": files}))
    kwargs = {}

    def train(cfg, callbacks=(), progress=True, **given):
        kwargs.update(given)
        return Path(cfg.output_dir), {"validation": {"f1_macro": 0.5}}

    mp = pytest.MonkeyPatch()
    mp.setattr("bertkit.tuning.study.train", train)
    try:
        code, _, err = cli("tune", "-c", config, "--trials", "1", "--retrain-best")
    finally:
        mp.undo()
    assert code == 0, err
    assert kwargs.get("overwrite") is True and (out / "best" / "model.safetensors").is_file()


def test_retrain_best_into_a_folder_it_may_not_replace_is_refused_before_any_trial(
    cli, tmp_path, tiny_model, easy_data, quick_trials
):
    config = write_config(tmp_path, tiny_model, easy_data["train"])
    out = tmp_path / "out"
    assert cli("tune", "-c", config, "--trials", "1")[0] == 0
    (out / "best").mkdir()
    (out / "best" / "notes.txt").write_text("mine")
    before = len(quick_trials)
    code, _, err = cli("tune", "-c", config, "--trials", "1", "--retrain-best")
    assert code == 2 and "best" in err and len(quick_trials) == before
    assert (out / "best" / "notes.txt").read_text() == "mine"


# ---------------------------------------------------------------- a study in use


@pytest.mark.spawns
def test_overwrite_while_another_process_runs_the_study_is_refused_naming_it(
    cli, tmp_path, tiny_model, easy_data, quick_trials
):
    """`tune --overwrite` while another tune ran the same study deleted the study and its trial
    folders under it (the running one died with three tracebacks); now it is seen, as train's
    output lock sees a run, and refused naming the process. Without --overwrite, joining stays
    allowed (a study is shared)."""
    import subprocess
    import sys

    config = write_config(tmp_path, tiny_model, easy_data["train"])
    out = tmp_path / "out"
    code, _, err = cli("tune", "-c", config, "--trials", "1", "--timeout", "1")
    assert code == 0, err
    # another process running the study: it holds its place beside the folder while it runs
    holder = subprocess.Popen(
        [sys.executable, "-c", "import sys, time; from bertkit.tuning.output_folder import StudyUsers; "
         "StudyUsers(sys.argv[1]).join(); print('joined', flush=True); time.sleep(120)", str(out)],
        stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert holder.stdout.readline().strip() == "joined"
        before = sorted(p.name for p in out.iterdir())
        code, _, err = cli("tune", "-c", config, "--trials", "1", "--overwrite")
        assert code == 2 and "in use" in flat(err) and f"process {holder.pid}" in flat(err), err
        assert "Traceback" not in err and sorted(p.name for p in out.iterdir()) == before  # nothing deleted
    finally:
        holder.kill()
        holder.wait()
    code, _, err = cli("tune", "-c", config, "--trials", "1", "--timeout", "1", "--overwrite")
    assert code == 0, err  # the other process is gone: its place is swept, and --overwrite goes ahead


def test_a_storage_that_vanishes_ends_the_run_in_one_line(cli, tmp_path, tiny_model, easy_data, monkeypatch):
    config = write_config(tmp_path, tiny_model, easy_data["train"])
    db = tmp_path / "out" / "study.db"

    def train(cfg, callbacks=(), progress=True, **kwargs):
        for path in db.parent.glob("study.db*"):
            path.unlink()  # the storage deleted while a trial runs
        db.mkdir()  # and its name taken by a folder, so it cannot be made again
        return Path(cfg.output_dir), {"validation": {"f1_macro": 0.5}}

    monkeypatch.setattr("bertkit.tuning.study.train", train)
    code, _, err = cli("tune", "-c", config, "--trials", "2")
    assert code == 2 and "study storage" in flat(err) and "Traceback" not in err, err

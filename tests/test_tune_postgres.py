"""`bertkit tune` on a real PostgreSQL server (docs/tune.md: studies shared by processes and
machines through a database URL): two processes run one study there, their trials shared and
counted once; best.yaml reproduces the best trial exactly; a process stopped in a trial leaves it
recorded as failed, not running; and no password of the URL is printed or written anywhere.

The server is started for the test in a temporary folder, on loopback only (tests/helpers/real_parts.py):
skipped where PostgreSQL is not installed, failed under CI, whose machines have it."""

import json
import os
import signal
import subprocess
import sys
import time

import pytest
from helpers.real_parts import postgres_server
from test_tune_e2e import write_config

pytest.importorskip("optuna")
pytest.importorskip("psycopg")
pytestmark = pytest.mark.slow  # the trials train (a tiny model, a few seconds each)

SPACE = """tune:
  space:
    train.learning_rate: {low: 1.0e-4, high: 1.0e-2, log: true}
  random_trials: 2
"""


def _trials(url: str, name: str) -> list:
    import optuna

    return optuna.load_study(study_name=name, storage=url).trials


def test_two_processes_share_one_study_on_postgresql(tmp_path, tiny_model, easy_data, cli):
    with postgres_server() as (url, password):
        config = write_config(tmp_path, tiny_model, easy_data, SPACE)
        env = {**os.environ, "HF_HUB_OFFLINE": "1", "OMP_NUM_THREADS": "1"}
        command = [sys.executable, "-m", "bertkit", "tune", "-c", str(config), "--storage", url, "--study", "shared"]
        workers = [
            subprocess.Popen([*command, "--trials", "2", "-o", str(tmp_path / f"w{i}")], env=env,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            for i in range(2)
        ]  # fmt: skip
        said = []
        for worker in workers:
            out, err = worker.communicate(timeout=600)
            said.append(out + err)
            assert worker.returncode == 0, err
        trials = _trials(url, "shared")
        assert sorted(t.number for t in trials) == [0, 1, 2, 3] and all(t.state.name == "COMPLETE" for t in trials)
        assert len({t.params["train.learning_rate"] for t in trials}) == 4  # each trial its own values

        # best.yaml is the best trial's config: trained again, it gives the best trial's score exactly
        last = max((tmp_path / f"w{i}" for i in range(2)), key=lambda w: len(json.loads((w / "trials.json")
                   .read_text())["trials"]))  # fmt: skip
        best = json.loads((last / "trials.json").read_text())["best"]
        assert best["value"] == max(t.value for t in trials)
        code, _, err = cli("train", "classify", "-c", last / "best.yaml")
        assert code == 0, err
        assert json.loads((last / "best" / "metrics.json").read_text())["validation"]["f1_macro"] == best["value"]

        # a process stopped (SIGTERM) in a trial: the trial is failed in the shared study, not left running
        stopped = subprocess.Popen([*command, "--trials", "5", "-o", str(tmp_path / "w2")], env=env,
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)  # fmt: skip
        deadline = time.monotonic() + 300
        while not any(t.state.name == "RUNNING" for t in _trials(url, "shared")):
            assert stopped.poll() is None and time.monotonic() < deadline, stopped.communicate()
            time.sleep(0.5)
        time.sleep(1)
        stopped.send_signal(signal.SIGTERM)
        out, err = stopped.communicate(timeout=120)
        said.append(out + err)
        assert stopped.returncode == 128 + signal.SIGTERM, err
        states = [t.state.name for t in _trials(url, "shared")]
        assert "RUNNING" not in states and states.count("FAIL") == 1, states

        # the password is nowhere: not in what the processes said, nor in any report they wrote
        for text in said:
            assert password not in text and password.split("/")[0] not in text
        written = [p for w in tmp_path.glob("w*") for p in w.rglob("*") if p.is_file() and p.suffix != ".png"]
        assert written
        for path in written:
            content = path.read_bytes().decode("utf-8", "replace")
            assert password.split("/")[0] not in content, path

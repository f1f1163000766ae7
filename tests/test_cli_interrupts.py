"""A termination signal becomes `Interrupted` where the program is, except inside an import, where
raising can abort the process (torch imports Python modules from its C++ start-up): there it is held
and raised as soon as the import is over."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

OFFLINE = {**os.environ, "HF_HUB_OFFLINE": "1"}

_SCRIPT = textwrap.dedent(
    """
    import signal, sys, time
    sys.path.insert(0, sys.argv[1])
    from bertkit.cli import interrupts
    interrupts.install()
    try:
        import slow_module
    except interrupts.Interrupted as err:
        print("interrupted inside the import", err.number)
        sys.exit(1)
    try:
        print("imported", slow_module.DONE, flush=True)
        time.sleep(5)
        print("never interrupted")
    except interrupts.Interrupted as err:
        print("interrupted after the import", err.number)
    """
)

_MODULE = textwrap.dedent(
    """
    import signal, time
    signal.raise_signal(signal.{name})
    for _ in range(20):  # bytecode boundaries where a raising handler would run
        time.sleep(0.01)
    DONE = True
    """
)


def _run(tmp_path, name: str) -> str:
    (tmp_path / "slow_module.py").write_text(_MODULE.format(name=name))
    done = subprocess.run(
        [sys.executable, "-c", _SCRIPT, str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=60,
        # as at a terminal: a job started in the background (`cmd &`, as CI may be) ignores SIGINT,
        # and bertkit leaves an ignored signal ignored
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


@pytest.mark.spawns
def test_a_signal_during_an_import_waits_for_the_import_to_finish(tmp_path):
    out = _run(tmp_path, "SIGINT")
    assert "imported True" in out
    assert "interrupted after the import 2" in out


@pytest.mark.spawns
def test_sigterm_during_an_import_is_held_too(tmp_path):
    out = _run(tmp_path, "SIGTERM")
    assert "interrupted after the import 15" in out


def test_outside_an_import_the_signal_is_raised_at_once():
    from bertkit.cli import interrupts

    assert not interrupts.importing(sys._getframe())
    try:
        interrupts._stop(2, sys._getframe())
    except interrupts.Interrupted as err:
        assert err.number == 2
    else:
        raise AssertionError("the handler did not raise")


@pytest.mark.spawns
def test_a_closed_pipe_ends_as_shell_tools_end(tmp_path, tiny_model):
    """`bertkit ... | head -1` ended with exit code 1, which the docs keep for bugs: 141 (128 + SIGPIPE)."""
    corpus = tmp_path / "c.txt"
    corpus.write_text("".join(f"line {i} of the corpus\n" for i in range(20000)))
    command = f"{sys.executable} -m bertkit tokenize -m {tiny_model} --json -i {corpus} | head -1"
    done = subprocess.run(
        ["bash", "-c", f"set -o pipefail; {command}"], capture_output=True, text=True, timeout=120, env=OFFLINE
    )
    assert done.returncode == 128 + signal.SIGPIPE, done.stderr


# ------------------------------------------------------------ bertkit run inside another program
# `main` puts back the handlers it found when it returns: a test session (or any program) that
# runs bertkit in its own process stops on Ctrl-C and SIGTERM as it would without bertkit.

_SESSION = textwrap.dedent(
    """
    import sys, time
    sys.path.insert(0, {tests!r})
    from helpers.in_process import run_main
    from bertkit.cli import app

    @app.command("wait-here")
    def wait_here():
        print("waiting inside bertkit", flush=True)
        time.sleep(60)

    def test_first():
        assert run_main("--version") == 0  # bertkit ran in this process and returned
        if {inside!r}:
            run_main("wait-here")
        else:
            print("waiting after bertkit", flush=True)
            time.sleep(60)

    def test_second():
        print("the session went on", flush=True)
    """
)


def _interrupted_session(tmp_path, number: int, inside: bool) -> tuple[int, str]:
    """A pytest session of two tests, the first running bertkit in-process and then waiting (after
    `main` returned, or inside a command): `number` is sent while it waits."""
    tests = str(Path(__file__).parent)
    (tmp_path / "pytest.ini").write_text("[pytest]\n")  # a session of its own, not the project's
    (tmp_path / "test_session.py").write_text(_SESSION.format(tests=tests, inside=inside))
    process = subprocess.Popen(
        [sys.executable, "-m", "pytest", "-q", "-s", "-p", "no:cacheprovider", "test_session.py"],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env={**OFFLINE, "PYTHONPATH": os.pathsep.join([str(Path(tests).parent), os.environ.get("PYTHONPATH", "")])},
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),  # as at a terminal
    )
    lines = []
    for line in process.stdout:
        lines.append(line)
        if "waiting" in line:
            break
    time.sleep(0.3)  # well inside the sleep
    process.send_signal(number)
    try:
        lines.append(process.communicate(timeout=30)[0])
    finally:
        process.kill()
    return process.returncode, "".join(lines)


@pytest.mark.spawns
def test_ctrl_c_after_bertkit_returned_stops_the_session(tmp_path):
    code, out = _interrupted_session(tmp_path, signal.SIGINT, inside=False)
    assert "waiting after bertkit" in out and "the session went on" not in out, out
    assert code == 2 and "KeyboardInterrupt" in out, out  # pytest's exit code for an interrupted session


@pytest.mark.spawns
def test_sigterm_after_bertkit_returned_ends_the_session(tmp_path):
    code, out = _interrupted_session(tmp_path, signal.SIGTERM, inside=False)
    assert code == -signal.SIGTERM and "the session went on" not in out, out  # as without bertkit: killed


@pytest.mark.spawns
def test_ctrl_c_inside_an_in_process_command_stops_the_session(tmp_path):
    """The command ends as on the command line (exit 130, nothing half-written), and the test's
    runner (tests/helpers/in_process.py) turns that into the session's KeyboardInterrupt."""
    code, out = _interrupted_session(tmp_path, signal.SIGINT, inside=True)
    assert "waiting inside bertkit" in out and "interrupted; nothing half-written was left behind" in out, out
    assert code == 2 and "the session went on" not in out, out

"""The CLI's own behaviour: help is light and fast, version, config commands, info."""

import subprocess
import sys

import pytest
import yaml

HEAVY = ("torch", "transformers", "datasets", "evaluate", "accelerate", "sklearn", "matplotlib")


@pytest.mark.spawns
def test_help_imports_nothing_heavy():
    probe = (
        "import sys\n"
        "from bertkit.cli import main\n"
        "for args in (['--help'], ['train', 'classify', '--help'], ['predict', '--help'],\n"
        "             ['config', 'init', '--help']):\n"
        "    try:\n"
        "        main(args)\n"
        "    except SystemExit:\n"
        "        pass\n"
        f"print(sorted(m for m in {HEAVY!r} if m in sys.modules))\n"
    )
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip().splitlines()[-1] == "[]"


def test_version(cli):
    from bertkit import __version__

    code, out, _ = cli("--version")
    assert code == 0 and out.strip() == f"bertkit {__version__}"


def test_config_init_and_show(cli, tmp_path):
    code, out, _ = cli("config", "init", "classify")
    assert code == 0 and "# peak learning rate" in out
    target = tmp_path / "mine.yaml"
    assert cli("config", "init", "classify", "-o", target)[0] == 0
    code, out, _ = cli("config", "show", "-c", target, "--set", "train.epochs=1")
    shown = yaml.safe_load(out)
    assert code == 0 and shown["train"]["epochs"] == 1 and shown["classify"]["truncation"] == "head"
    code, _, err = cli("config", "init", "classify", "-o", target)
    assert code == 2 and "already exists" in err
    code, _, err = cli("config", "init", "clasify")
    assert code == 2 and "did you mean 'classify'" in err


def test_info(cli):
    code, out, _ = cli("info")
    assert code == 0 and "transformers" in out and "cuda" in out and "accelerate" in out


@pytest.mark.spawns
def test_help_reflows_every_command_s_text_to_the_terminal():
    """A docstring's own line breaks survived into `bertkit --help`'s list of commands, mid-sentence
    ("in input order (a blank" / "line gets ..."): on a terminal wide enough for every line, each
    command's text is one line, in the list and in the command's own help."""
    import os

    env = {**os.environ, "COLUMNS": "1000", "TERMINAL_WIDTH": "1000"}
    run = [sys.executable, "-m", "bertkit"]
    listed = subprocess.run([*run, "--help"], capture_output=True, text=True, env=env, timeout=60).stdout
    rows = [line for line in listed.splitlines() if line.startswith("│")]
    commands = [row for row in rows if row[1:].strip() and not row[2:].startswith(" ")]
    assert commands and all(not row[2:].startswith(" ") for row in rows if "Commands" not in row), listed
    own = subprocess.run([*run, "predict", "--help"], capture_output=True, text=True, env=env, timeout=60).stdout
    assert "in input order (a blank line gets an empty result)." in own, own

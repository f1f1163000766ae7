"""The command line is a thin layer: one module per command or group, named after it, that
parses options and calls the library; importing it loads no model code."""

import ast
import subprocess
import sys
from pathlib import Path

import pytest

CLI = Path(__file__).resolve().parent.parent / "bertkit" / "cli"
HEAVY = ("torch", "transformers", "datasets", "numpy", "evaluate", "accelerate")


def test_each_command_has_its_module():
    from bertkit.cli import app

    names = [c.name or c.callback.__name__ for c in app.registered_commands]
    names += [g.name for g in app.registered_groups]
    assert len(names) >= 10
    for name in names:
        module = name.replace("-", "_")  # `mine-negatives` lives in mine_negatives.py
        assert (CLI / f"{module}.py").is_file(), f"`bertkit {name}` has no bertkit/cli/{module}.py"


def test_command_modules_import_no_heavy_library_at_load():
    for path in CLI.glob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in tree.body:  # module level only: commands import what they need when they run
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                names = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
                assert not [n for n in names if n.split(".")[0] in HEAVY], f"{path.name} imports {names} at load"


@pytest.mark.spawns
def test_importing_the_cli_loads_no_model_code():
    code = (
        "import sys, bertkit.cli; print(sorted(m for m in ('torch', 'transformers', 'datasets') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_commands_stay_thin():
    for path in CLI.glob("*.py"):
        lines = len(path.read_text(encoding="utf-8").splitlines())
        assert lines <= 150, f"{path.name} has {lines} lines: move the logic into the library"

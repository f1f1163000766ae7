"""An optional part that is missing says which command installs it: bertkit is not on PyPI, so
the command names the extra's own packages (read from the installed metadata) and the checkout's
`pip install -e '.[extra]'`."""

from __future__ import annotations

from pathlib import Path

import pytest
from packaging.requirements import Requirement

from bertkit.core.extras import install_command

ROOT = Path(__file__).resolve().parents[1]
tomllib = pytest.importorskip("tomllib")  # Python 3.11+


def _extras() -> dict[str, list[str]]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    return project["optional-dependencies"]


def test_every_extra_names_its_packages_and_the_checkout_form():
    for extra, requirements in _extras().items():
        command = install_command(extra)
        assert f"pip install -e '.[{extra}]'" in command, command
        assert "bertkit[" not in command, command  # bertkit is not published: that form fails
        for line in requirements:
            requirement = Requirement(line)
            if requirement.marker is None or requirement.marker.evaluate():
                extras = f"[{','.join(sorted(requirement.extras))}]" if requirement.extras else ""
                assert f"'{requirement.name}{extras}{requirement.specifier}'" in command, (extra, command)


def test_an_unknown_extra_falls_back_to_the_checkout_form():
    assert install_command("no-such-extra") == "pip install -e '.[no-such-extra]' in a bertkit checkout"


def test_no_message_in_the_code_tells_users_to_install_from_pypi():
    for path in (ROOT / "bertkit").rglob("*.py"):
        assert "pip install 'bertkit[" not in path.read_text(), path

"""The declared lowest versions, as pins: `python .ci/floors.py EXTRA,...` prints one `name==floor`
line for every requirement of pyproject.toml's dependencies and of the named extras that has a
lower bound (`>=`), its environment marker kept. `make test-floors` resolves the project with these
as constraints (everything else at its newest that fits) and runs the fast tier on the result, so
every floor the project declares is a version that was installed and tested."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import tomllib

REQUIREMENT = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._\-]*)(\[[^\]]*\])?\s*([^;]*)(;.*)?$")


def floors(extras: list[str]) -> list[str]:
    project = tomllib.loads((Path(__file__).resolve().parent.parent / "pyproject.toml").read_text())["project"]
    wanted = list(project["dependencies"])
    for extra in extras:
        if extra not in project["optional-dependencies"]:
            sys.exit(f"floors.py: no extra {extra!r} in pyproject.toml")
        wanted += project["optional-dependencies"][extra]
    pins = []
    for requirement in wanted:
        name, _, spec, marker = REQUIREMENT.match(requirement).groups()
        lowest = next((part.strip()[2:].strip() for part in spec.split(",") if part.strip().startswith(">=")), None)
        if lowest is None:
            sys.exit(f"floors.py: {requirement!r} declares no lowest version (>=): every requirement needs one")
        pins.append(f"{name}=={lowest}{(' ' + marker) if marker else ''}")
    return pins


if __name__ == "__main__":
    print("\n".join(floors([e for e in (sys.argv[1] if len(sys.argv) > 1 else "").split(",") if e])))

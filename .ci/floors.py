"""The declared lowest versions, as pins: `python .ci/floors.py EXTRA,...` prints one `name==floor`
line for every requirement of pyproject.toml's dependencies and of the named extras that has a
lower bound (`>=`), its environment marker kept; `python .ci/floors.py --installed PYTHON
EXTRA,...` checks that PYTHON's environment holds each of them exactly.

`make test-floors` resolves the project with these as constraints (everything else at its newest
that fits) and runs the fast tier on the result, so every floor the project declares is a
version that was installed and tested."""

from __future__ import annotations

import json
import re
import subprocess
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


def installed_versions(python: str, names: list[str]) -> dict[str, str | None]:
    """The version of each distribution installed for the interpreter `python` (None: missing)."""
    script = (
        "import importlib.metadata as m, json, sys\n"
        "def v(n):\n"
        "    try:\n        return m.version(n)\n"
        "    except m.PackageNotFoundError:\n        return None\n"
        "print(json.dumps({n: v(n) for n in sys.argv[1:]}))"
    )
    return json.loads(subprocess.run([python, "-c", script, *names], check=True, capture_output=True, text=True).stdout)


def check_installed(python: str, extras: list[str]) -> list[str]:
    """Each floor that the environment of `python` does not hold exactly (a local build tag such
    as torch's `+cu121` aside)."""
    from packaging.version import Version

    pins = [pin.split(" ;")[0] for pin in floors(extras)]
    wanted = dict(pin.split("==") for pin in pins)
    found = installed_versions(python, list(wanted))
    return [
        f"{name}: declared >= {floor}, installed {found[name]}"
        for name, floor in wanted.items()
        if found[name] is None or Version(Version(found[name]).base_version) != Version(floor)
    ]


def main(argv: list[str]) -> int:
    if argv[:1] == ["--installed"]:
        python, extras = argv[1], argv[2] if len(argv) > 2 else ""
        wrong = check_installed(python, [e for e in extras.split(",") if e])
        if wrong:
            print("floors.py: the environment does not hold the declared floors:\n  " + "\n  ".join(wrong))
            return 1
        print(f"floors.py: every declared floor is what {python} runs")
        return 0
    print("\n".join(floors([e for e in (argv[0] if argv else "").split(",") if e])))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

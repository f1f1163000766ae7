"""bertkit's own `evaluate` metric modules, loaded by path (the Hub's are not needed)."""

from __future__ import annotations

import functools
from pathlib import Path

HERE = Path(__file__).parent


@functools.cache
def load(name: str):
    """`evaluate.load` on one of the modules in this folder, kept in memory (safe with many processes)."""
    import evaluate

    path = HERE / f"{name}.py"
    if not path.is_file():
        raise ValueError(f"no bertkit metric module named {name}")
    return evaluate.load(str(path), keep_in_memory=True)


def scalars(result: dict) -> dict[str, float]:
    """The plain numbers of a metric result (what the Trainer can log and compare)."""
    return {k: float(v) for k, v in result.items() if isinstance(v, int | float) and not isinstance(v, bool)}

"""bertkit's own `evaluate` metric modules, loaded by path (the Hub's are not needed)."""

from __future__ import annotations

import functools
from pathlib import Path

HERE = Path(__file__).parent


@functools.cache
def load(name: str):
    """`evaluate.load` on one of the modules in this folder, kept in memory (safe with many processes)."""
    evaluate = import_evaluate()
    path = HERE / f"{name}.py"
    if not path.is_file():
        raise ValueError(f"no bertkit metric module named {name}")
    return evaluate.load(str(path), keep_in_memory=True)


def import_evaluate():
    """The `evaluate` library, imported without torch: on import it reaches for
    `transformers.pipelines` (for its `Evaluator` classes, which bertkit does not use), and that
    imports torch and transformers' modelling code, which an ONNX bundle's `bertkit evaluate`
    must not load. The pipelines module is hidden while `evaluate` is imported (it then takes
    transformers as absent for its evaluators) and unhidden after."""
    import sys

    if "evaluate" in sys.modules:
        return sys.modules["evaluate"]
    hidden = "transformers.pipelines" not in sys.modules
    if hidden:
        sys.modules["transformers.pipelines"] = None  # `import` of it raises ImportError
    try:
        import evaluate
    finally:
        if hidden and sys.modules.get("transformers.pipelines", 0) is None:
            del sys.modules["transformers.pipelines"]
    return evaluate


def scalars(result: dict) -> dict[str, float]:
    """The plain numbers of a metric result (what the Trainer can log and compare)."""
    return {k: float(v) for k, v in result.items() if isinstance(v, int | float) and not isinstance(v, bool)}

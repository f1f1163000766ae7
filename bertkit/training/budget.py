"""`train.learning_rate: auto` made a number, once the run's length is known."""

from __future__ import annotations

import os

from bertkit.config import Config
from bertkit.core.learning_rates import AUTO, planned_steps
from bertkit.core.progress import console
from bertkit.core.sharding import is_main


def resolve_rates(cfg: Config, train, say: bool = True) -> tuple[Config, dict]:
    """`cfg` with numbers for `auto` learning rates, and what was decided (for bertkit.json, and
    said in the log); `cfg` itself when the rates are numbers already. `train`: the training
    features (a streamed set has no length: it runs train.max_steps); `say`: print the rates chosen."""
    t = cfg.train
    if AUTO not in (t.learning_rate, t.head_learning_rate):
        return cfg, {}
    examples = len(train) if hasattr(train, "__len__") else 0
    rule = cfg.rate_rule()  # the config's check makes sure there is one
    processes = int(os.environ.get("WORLD_SIZE", "1"))
    steps = planned_steps(examples, t.batch_size, t.gradient_accumulation_steps, t.epochs, t.max_steps, processes)
    factor = rule.factor(steps)
    rates = {}
    if t.learning_rate == AUTO:
        rates["learning_rate"] = float(f"{rule.base * factor:.3g}")
    if t.head_learning_rate == AUTO:
        rates["head_learning_rate"] = float(f"{rule.head * factor:.3g}") if rule.head else None
    resolved = cfg.model_copy(update={"train": t.model_copy(update=rates)})
    note = {"auto": sorted(rates), "steps": steps, "factor": round(factor, 3), **rates}
    if say and is_main():

        chosen = ", ".join(f"{k.replace('_', ' ')} {rates[k]:g}" for k in note["auto"] if rates[k] is not None)
        console.print(f"{chosen} (auto: ×{note['factor']:g} for a {steps:,}-step run)")
    return resolved, note

"""`train.learning_rate: auto`: a task's measured rate, raised for short runs.

A fine-tuning run of a few dozen steps needs a higher rate than one of thousands: Adam moves a
weight by about the rate per step, so a short run at a long run's rate leaves the fresh head (and
the model) nearly where it started. bertkit's benchmarks measured it (docs/benchmarks.md,
"Defaults on data they were not found on"): classify at 5e-5 predicts SST-2's majority class
after 38 steps and scores 0.66 after 63, where 2e-4 scores 0.78 at both; after 19 steps even 2e-4
stays on the majority class, where 3.6e-4 (the √ law below) scores 0.70.

The rule: `base × clamp(√(reference_steps / steps), 1, max_factor)`; a run of reference_steps or
more uses the base rate as it is. Light on purpose (no torch): the task registry holds one rule
per task.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

AUTO = "auto"


@dataclass(frozen=True)
class StepScaledRate:
    base: float  # the measured rate for long runs
    reference_steps: int  # runs at least this long use `base`
    max_factor: float  # the most a short run raises it by
    head: float | None = None  # the task head's own base rate (train.head_learning_rate: auto)

    def factor(self, steps: int) -> float:
        return min(self.max_factor, max(1.0, math.sqrt(self.reference_steps / max(1, steps))))

    def describe(self) -> str:
        return (
            f"{self.base:g} for runs of {self.reference_steps:,} steps or more, "
            f"times √({self.reference_steps:,} / steps) for shorter ones (at most {self.max_factor:g}×)"
        )


def planned_steps(examples: int, batch_size: int, accumulation: int, epochs: float, max_steps: int | None,
                  processes: int = 1) -> int:
    """The optimiser steps a run will take, as the Trainer counts them."""
    if max_steps:
        return max_steps
    batches = math.ceil(examples / (batch_size * max(1, processes)))
    return max(1, math.ceil(max(1, batches // accumulation) * epochs))


# `train.learning_rate` with `train.adapter` on and no rate given: LoRA's updates start at zero and
# want a far higher rate than full fine-tuning, and like it a higher one for shorter runs.
# bench/adapter_quality.py, MiniLM, batch 16, docs/benchmarks.md "LoRA adapters": at 100 steps 4e-3
# was the best rate tried on CoNLL (entity F1 0.747, against 0.682 at 2e-3 and 0.554 at 1e-3) and
# level with 2e-3 on SST-2 (0.800 both); at 300 steps on SST-2 4e-3 collapsed to the majority class
# (0.53) where 2e-3 scored 0.828: 2e-3 × √(400 / steps) gives 4e-3 at 100 steps, 2.3e-3 at 300
ADAPTER_RATES = StepScaledRate(base=2.0e-3, reference_steps=400, max_factor=2.0)

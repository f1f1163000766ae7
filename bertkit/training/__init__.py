"""One training run, the same for every task: Trainer built from the config, checkpoints in a
work directory, final scoring, and the bundle written atomically by the main process alone.

Checkpoints go to `<output_dir>.partial/` while training runs; `--resume` continues from there.
The finished bundle appears at `output_dir` in one rename, so a failed or interrupted run never
leaves a half-written model behind.
"""

from bertkit.training.run import run_inputs, train
from bertkit.training.run_dir import work_dir

__all__ = ["run_inputs", "train", "work_dir"]

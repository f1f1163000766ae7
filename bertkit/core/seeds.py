"""The range of a seed: numpy's and the Trainer's `set_seed` take 0 to 2**32 - 1, and a seed
outside it stopped a run with numpy's traceback. Every seed a user gives is checked against it (the
config's `train.seed`, `--seed` options)."""

MAX_SEED = 2**32 - 1

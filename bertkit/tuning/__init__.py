"""`bertkit tune`: hyperparameter search with Optuna over any task's config (docs/tune.md).

- `space`: the searched keys, each task's default space, a trial's config;
- `search`: Optuna's parts (storage, TPE seeded per trial, median pruner fed by evaluations);
- `study`: the study itself, each trial one `training.train` run in a temporary folder;
- `report`: trials.csv / trials.json, history.png, importances.png and best.yaml.

Optuna is an extra (`pip install -e '.[tune]'`; bertkit/core/extras.py), imported only when a study runs.
"""

from bertkit.tuning.study import TuneOptions, TuneResult, tune

__all__ = ["TuneOptions", "TuneResult", "tune"]

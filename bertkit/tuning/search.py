"""Optuna's parts as `bertkit tune` sets them up: the import (an extra), the sampler (TPE,
seeded per trial) and the pruner fed by each evaluation (the storage: `storage`)."""

from __future__ import annotations

import contextlib

from bertkit.core.errors import BertkitError
from bertkit.core.extras import install_command
from bertkit.core.progress import callback_base, console
from bertkit.training.divergence import TrainingDiverged


def require_optuna():
    try:
        import optuna
    except ImportError:
        raise BertkitError(f"bertkit tune needs Optuna, which is not installed: {install_command('tune')}") from None
    optuna.logging.set_verbosity(optuna.logging.WARNING)  # bertkit prints one line per trial itself
    return optuna


@contextlib.contextmanager
def user_errors_untraced():
    """A user error (BertkitError) raised in a trial without Optuna's traceback: Optuna logs every
    failed trial with its traceback, then re-raises what it does not catch. That one stops the
    study and is shown as bertkit shows every user error (one line, exit 2), so its log is dropped;
    a trial that diverged (caught: the study goes on) is said in one line, no traceback."""
    import logging


    dropped: list = []  # a trial whose error record was dropped: its "failed with value" one goes too

    def untraced(record: logging.LogRecord) -> bool:
        err = record.exc_info[1] if record.exc_info else None
        if isinstance(err, BertkitError):
            dropped.append(err)
            if isinstance(err, TrainingDiverged):  # the study goes on: said in one line
                console.print(f"[yellow]{err}[/yellow]")
            return False
        if dropped and record.getMessage().endswith("failed with value None."):
            dropped.clear()
            return False
        return True

    logger = logging.getLogger("optuna.study._optimize")  # where Optuna logs a failed trial
    logger.addFilter(untraced)
    try:
        yield
    finally:
        logger.removeFilter(untraced)


def sampler(seed: int, random_trials: int):
    """TPE, seeded from the config's seed and the trial's number: one process reproduces its
    proposals from the same history, and processes sharing a study (each with the same config,
    so the same seed) still propose different values, since no two trials share a number."""
    optuna = require_optuna()
    import warnings

    def tpe(trial_seed: int):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # multivariate is marked experimental
            # multivariate: learning rate and batch size are not independent
            return optuna.samplers.TPESampler(
                seed=trial_seed, n_startup_trials=random_trials, multivariate=True, constant_liar=True
            )

    class TrialSeeded(optuna.samplers.BaseSampler):
        def __init__(self):
            self.inner = tpe(seed)

        def before_trial(self, study, trial):
            self.inner = tpe((seed * 1_000_003 + trial.number) % 2**32)
            self.inner.before_trial(study, trial)

        def infer_relative_search_space(self, study, trial):
            return self.inner.infer_relative_search_space(study, trial)

        def sample_relative(self, study, trial, search_space):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                return self.inner.sample_relative(study, trial, search_space)

        def sample_independent(self, study, trial, param_name, param_distribution):
            return self.inner.sample_independent(study, trial, param_name, param_distribution)

        def after_trial(self, study, trial, state, values):
            self.inner.after_trial(study, trial, state, values)

        def reseed_rng(self):
            self.inner.reseed_rng()

    return TrialSeeded()


def pruner(tune):
    optuna = require_optuna()
    if tune.pruner == "none":
        return optuna.pruners.NopPruner()
    # steps are evaluations counted from 1: the earliest prune is just after prune_after_evaluations
    return optuna.pruners.MedianPruner(
        n_startup_trials=tune.prune_after_trials, n_warmup_steps=tune.prune_after_evaluations + 1
    )


def pruning_callback(trial, metric: str):
    """A Trainer callback that reports the validation metric of each evaluation to the study and
    stops the trial (optuna.TrialPruned, out of the Trainer) when the pruner says it lags."""
    optuna = require_optuna()

    class ReportToStudy(callback_base()):
        def __init__(self):
            self.evaluations, self.values = 0, []

        def on_evaluate(self, args, state, control, metrics=None, **kwargs):
            value = (metrics or {}).get(f"eval_{metric}")
            if value is None:
                return
            self.evaluations += 1
            self.values.append(float(value))
            trial.report(float(value), self.evaluations)
            if trial.should_prune():
                trial.set_user_attr("pruned_at_evaluation", self.evaluations)
                raise optuna.TrialPruned(f"{metric} {value:.4f} at evaluation {self.evaluations} lags the median")

    return ReportToStudy()


def parse_duration(text: str) -> float:
    """`--timeout`: seconds, or a duration such as 90s, 30m, 2h, 1h30m."""
    import re

    text = text.strip().lower()
    if re.fullmatch(r"\d+(\.\d+)?", text):
        seconds = float(text)
    else:
        parts = re.findall(r"(\d+(?:\.\d+)?)\s*([hms])", text)
        if not parts or re.sub(r"(\d+(?:\.\d+)?)\s*([hms])", "", text).strip():
            raise BertkitError(f"--timeout {text}: write a duration as seconds or e.g. 90s, 30m, 2h, 1h30m")
        seconds = sum(float(n) * {"h": 3600, "m": 60, "s": 1}[unit] for n, unit in parts)
    if seconds <= 0:
        raise BertkitError(f"--timeout {text}: give a duration above zero")
    return seconds

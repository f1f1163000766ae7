"""`bertkit tune`: an Optuna study over a config's keys, each trial one `training.train` run in a
temporary folder (deleted after: only its metrics and values are kept, in the study), then the
reports and `best.yaml` in the config's output folder."""

from __future__ import annotations

import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path

from bertkit import outputs
from bertkit.config import Config
from bertkit.errors import BertkitError
from bertkit.progress import console, status
from bertkit.tuning import search
from bertkit.tuning.space import check_space, describe, space_of, with_values

KIND = "tune"  # the manifest's kind for a tune output folder


@dataclass(frozen=True)
class TuneOptions:
    trials: int | None = 20  # trials this process runs (Optuna's n_trials); None: until the timeout
    timeout: float | None = None  # seconds after which no new trial starts
    storage: str | None = None  # a database URL; a SQLite file in the output folder when None
    study: str | None = None  # the study's name in the storage; the task's when None
    retrain_best: bool = False
    overwrite: bool = False
    protect: tuple = ()  # the run's inputs (the config file)


@dataclass
class TuneResult:
    output: Path
    study: str
    storage: str
    metric: str
    direction: str
    rows: list[dict] = field(default_factory=list)  # every trial of the study, best first
    best_config: Path | None = None
    bundle: Path | None = None
    bundle_scores: dict | None = None
    notes: list[str] = field(default_factory=list)


def tune(cfg: Config, options: TuneOptions) -> TuneResult:
    """Run `options.trials` trials of the study named by `options` (created, or continued when it
    exists), then write the reports; with `retrain_best`, train the best config into `best/`."""
    optuna = search.require_optuna()
    from bertkit.tasks import get_task
    from bertkit.training import run_inputs
    from bertkit.tuning import report

    final = Path(cfg.output_dir)
    protect = run_inputs(cfg, get_task(cfg.task), options.protect)
    space = space_of(cfg)
    check_space(cfg, space)
    metric = metric_of(cfg)
    from bertkit.training.divergence import TrainingDiverged
    from bertkit.training.trainer import LOWER_IS_BETTER

    direction = "minimize" if metric.endswith(LOWER_IS_BETTER) else "maximize"
    open_output(final, options.overwrite, protect)
    url = search.storage_url(options.storage, final)
    name = options.study or cfg.task
    study = optuna.create_study(
        storage=search.open_storage(url),
        study_name=name,
        direction=direction,
        sampler=search.sampler(cfg.train.seed, cfg.tune.random_trials),
        pruner=search.pruner(cfg.tune),
        load_if_exists=True,
    )
    check_same_study(study, name, metric, direction)
    result = TuneResult(final, name, url, metric, direction)
    _announce(study, result, space, options)
    current: dict = {}  # the number of the trial this process is running
    objective = _objective(cfg, space, metric, direction, final, current)
    try:
        study.optimize(
            objective,
            n_trials=options.trials,
            timeout=options.timeout,
            callbacks=[_progress_line(metric)],
            catch=(*_out_of_memory(), TrainingDiverged),  # a trial that diverged fails alone
            gc_after_trial=True,
        )
    except BaseException:  # Ctrl-C, SIGTERM, SIGHUP: Optuna leaves the trial it was running as running
        _fail_unfinished(study, current.get("trial"))
        raise
    finally:  # interrupted too: what finished is reported
        best = report.write(study, cfg, result, space)
    if options.retrain_best and best is not None:
        result.bundle, result.bundle_scores = _retrain(best, [*options.protect, result.best_config])
    return result


def _fail_unfinished(study, number: int | None) -> None:
    """Mark the trial of this process that an interruption cut short as failed. Left running, it
    would stay so in the storage for good: counted as under way by every process sharing the
    study, and never finished by a continued one."""
    from optuna.trial import TrialState  # importable: tune() required optuna before starting

    if any(t.number == number for t in study.get_trials(deepcopy=False, states=(TrialState.RUNNING,))):
        study.tell(number, state=TrialState.FAIL)


def metric_of(cfg: Config) -> str:
    """The validation metric the study optimises: tune.metric, else train.metric_for_best_model,
    else the task's own (which may depend on the data: regression or classes, scored pairs...)."""
    from bertkit.run_info import RunInfo
    from bertkit.tasks import get_task
    from bertkit.training.trainer import check_metric

    if cfg.data.train is None:
        raise BertkitError("the config has no data.train: set it to a file path or {hub: NAME}")
    task = get_task(cfg.task)
    with status("reading the data to find the task's metric"):
        info = RunInfo(task.setup(task.load(cfg), cfg))
    given = cfg.tune.metric or cfg.train.metric_for_best_model
    metric = (given or task.best_metric(info)).removeprefix("eval_")
    if cfg.tune.metric:
        try:
            check_metric(metric, task.metric_names(info), cfg)
        except BertkitError as err:
            raise BertkitError(str(err).replace("train.metric_for_best_model", "tune.metric")) from None
    if cfg.train.eval_strategy == "no":
        console.print("[yellow]train.eval_strategy is no: trials are scored at the end only, none is pruned[/yellow]")
    return metric


def open_output(final: Path, overwrite: bool, protect) -> None:
    """The output folder: made (with a manifest, so that it is bertkit's from the start), or a
    tune output of an earlier run, continued; with --overwrite an earlier one is replaced."""
    if final.exists() and not overwrite:
        try:
            outputs.check_output_dir(final, True, protect, KIND)  # would --overwrite be allowed? then it is ours
        except BertkitError as err:
            raise BertkitError(f"{err} (a study continues only in a folder that bertkit tune wrote)") from None
        if not (final / outputs.MANIFEST).is_file():  # an empty folder: bertkit's from now on
            outputs.write_manifest(final, KIND)
        return
    outputs.check_output_dir(final, overwrite, protect, KIND)
    if final.exists():
        shutil.rmtree(final)
    final.mkdir(parents=True)
    outputs.write_manifest(final, KIND)


def check_same_study(study, name: str, metric: str, direction: str) -> None:
    """A study continued must optimise the same metric the same way."""
    attrs = study.user_attrs
    if "metric" not in attrs:
        study.set_user_attr("metric", metric)
        return
    if attrs["metric"] != metric or study.direction.name.lower() != direction:
        raise BertkitError(
            f"study '{name}' optimises {attrs['metric']} ({study.direction.name.lower()}), this config "
            f"{metric} ({direction}): name another study with --study, or set tune.metric: {attrs['metric']}"
        )


def _announce(study, result: TuneResult, space: dict, options: TuneOptions) -> None:
    done = len(study.trials)
    console.print(
        f"[bold]study {result.study}[/bold] ({search.shown_url(result.storage)}): "
        f"{result.direction} validation {result.metric}"
        + (f", continuing after {done} trials" if done else "")
    )
    for key, text in describe(space):
        console.print(f"  {key}: {text}")
    limit = [f"{options.trials} trials"] if options.trials else []
    limit += [f"at most {options.timeout:.0f} s"] if options.timeout else []
    console.print(f"running {' and '.join(limit) or 'until interrupted'} in this process")


def _objective(cfg: Config, space: dict, metric: str, direction: str, final: Path, current: dict):
    from transformers.utils import logging as hf_logging

    from bertkit.metrics import scalars
    from bertkit.training import train
    from bertkit.training.divergence import TrainingDiverged
    from bertkit.tuning.space import suggest

    hf_logging.disable_progress_bar()  # no "Writing model shards" bar per trial: one line each
    override = {"train.metric_for_best_model": metric} if cfg.tune.metric else {}

    def objective(trial) -> float:
        current["trial"] = trial.number  # the trial an interruption would cut short
        values = suggest(trial, space)
        # the test data is never looked at while searching: --retrain-best scores it
        # in the study's folder, as `.trial.tmp-PID-*`: a process killed mid-trial (kill -9) leaves
        # its trial there, and the next run in that folder sweeps it (not a lasting /tmp leak)
        folder = outputs.staging_dir(final / "trial")
        reporter = search.pruning_callback(trial, metric)
        try:
            trial_cfg = with_values(cfg, {**values, **override, "data.test": None}, output_dir=str(folder / "model"))
            started = time.perf_counter()
            _, scores = train(trial_cfg, callbacks=[reporter], progress=False)
            trial.set_user_attr("validation", scalars(scores["validation"]))
            trial.set_user_attr("train_seconds", round(time.perf_counter() - started, 1))
        except TrainingDiverged as err:  # failed (study.optimize catches it), never complete: it cannot win
            trial.set_user_attr("diverged_at_step", err.step)
            raise
        finally:
            shutil.rmtree(folder, ignore_errors=True)
        value = scores["validation"].get(metric)
        if value is None and reporter.values:  # the loss: logged by the Trainer, not scored by the task
            value = (max if direction == "maximize" else min)(reporter.values)  # the checkpoint training kept
        if value is None:
            raise BertkitError(f"the trial's validation scores have no '{metric}': {', '.join(scores['validation'])}")
        return float(value)

    return objective


def _out_of_memory() -> tuple:
    """A trial that runs out of GPU memory (a large batch) fails alone; the study goes on."""
    import torch

    return (torch.cuda.OutOfMemoryError,)


def _progress_line(metric: str):
    from bertkit.tuning.report import short_params

    def line(study, trial) -> None:
        state = trial.state.name.lower()
        value = f"{metric} {trial.value:.4f}" if trial.value is not None else "no value"
        where = f" at evaluation {trial.user_attrs['pruned_at_evaluation']}" if state == "pruned" else ""
        try:
            best = f"best {study.best_value:.4f} (trial {study.best_trial.number})"
        except ValueError:
            best = "no complete trial yet"
        seconds = trial.duration.total_seconds() if trial.duration else 0.0
        console.print(
            f"trial {trial.number} {state}{where}: {value} | {best} | {short_params(trial.params)} | {seconds:.0f} s"
        )

    return line


def _retrain(best: Config, protect) -> tuple[Path, dict]:
    """The best config trained as `bertkit train --config best.yaml` would (test data scored)."""
    from bertkit.training import train

    console.print(f"[bold]retraining the best config[/bold] into {best.output_dir}")
    final = Path(best.output_dir)
    replace = final.exists() and (final / outputs.INFO_FILE).is_file()  # an earlier retrained bundle
    return train(best, overwrite=replace, protect=protect)

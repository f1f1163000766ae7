"""`bertkit tune`: an Optuna study over a config's keys, each trial one `training.train` run in a
temporary folder (deleted after: only its metrics and values are kept, in the study), then the
reports and `best.yaml` in the config's output folder."""

from __future__ import annotations

import contextlib
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bertkit.config import Config
from bertkit.core import models, outputs
from bertkit.core.errors import BertkitError
from bertkit.core.metrics import scalars
from bertkit.core.progress import console, status
from bertkit.core.run_info import RunInfo
from bertkit.tasks import get_task
from bertkit.tasks.classify import strategy
from bertkit.training import run_inputs, train
from bertkit.training.divergence import TrainingDiverged
from bertkit.training.run import run_tokenizer
from bertkit.training.trainer import LOWER_IS_BETTER, check_metric
from bertkit.tuning import report, search, storage
from bertkit.tuning.experiment import check_experiment, experiment_of
from bertkit.tuning.output_folder import StudyUsers, claim_output, prepare_output, write_manifest
from bertkit.tuning.report import short_params
from bertkit.tuning.space import (
    check_space,
    check_study_space,
    describe,
    refuse_unused_keys,
    space_of,
    suggest,
    with_values,
)


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
    written: list[str] = field(default_factory=list)  # the report files this run wrote, as it wrote them


def tune(cfg: Config, options: TuneOptions) -> TuneResult:
    """Run `options.trials` trials of the study named by `options` (created, or continued when it
    exists and was run with the same settings and space), then write the reports; with
    `retrain_best`, train the best config into `best/`."""
    search.require_optuna()
    url = storage.storage_url(options.storage, Path(cfg.output_dir))
    with storage.errors_hidden(url):  # a storage's errors: exit 2, naming it without its credentials
        return _run(cfg, options, url)


@dataclass
class Tuning:
    """What one `bertkit tune` carries from phase to phase (`_run` lists them in order)."""

    cfg: Config
    options: TuneOptions
    url: str  # the storage's URL
    final: Path = field(init=False)  # the output folder
    protect: list = field(default_factory=list)  # what the study reads, never replaced by --overwrite
    metric: str = ""
    direction: str = ""
    space: dict = field(default_factory=dict)
    route: str | None = None  # classify's route on the data the config names, kept by every trial
    # the output folder's files: whose each is (see `claim_output`)
    ours: bool = False  # study.db is bertkit's
    named: list = field(default_factory=list)  # the files the user named inside the folder
    user: list = field(default_factory=list)  # the user's storage files, kept
    deletable: bool = False  # --overwrite replaces bertkit's study.db too
    study: Any = None
    result: TuneResult | None = None

    def __post_init__(self):
        self.final = Path(self.cfg.output_dir)

    @property
    def own_storage(self) -> bool:
        return self.options.storage is None  # study.db in the output folder by default


def _run(cfg: Config, options: TuneOptions, url: str) -> TuneResult:
    """The phases of a study, in order; each reads what the ones before it set on `tuning`."""
    tuning = Tuning(cfg, options, url)
    choose_space(tuning)  # the metric and its direction, the keys searched and their ranges, all checked
    users = StudyUsers(tuning.final)  # the processes running this study now
    with outputs.OutputLock(tuning.final):  # one process at a time sets the folder and the study up
        if options.overwrite:
            users.refuse_overwrite()  # it would delete the study under another process's trials
        claim_output(tuning)  # what in the output folder is bertkit's, checked and made ready
        open_study(tuning)  # the study created or continued, and checked to be the same experiment
        users.join()
    try:
        best = optimize(tuning)  # the trials, then the reports (also after an interruption)
    finally:
        users.leave()
    if options.retrain_best and best is not None:
        result = tuning.result
        result.bundle, result.bundle_scores = _retrain(best, [*options.protect, result.best_config])
    return tuning.result


def choose_space(s: Tuning) -> None:
    cfg = s.cfg
    s.protect = run_inputs(cfg, get_task(cfg.task), s.options.protect)
    if cfg.tune.space:  # the user's ranges are checked before the data is read
        check_space(cfg, cfg.tune.space)
    # the data, model and tokenizer checked too: a user error stops here, not in a trial
    s.metric, s.route = metric_of(cfg)
    route = s.route
    s.space = space_of(cfg, route)  # by default, the keys the route reads (classify's few-shot route: its own)
    refuse_unused_keys(s.space, route, route == "contrastive" and strategy.frozen_in_every_trial(cfg, s.space))
    if not cfg.tune.space:
        check_space(cfg, s.space)
        if route == "contrastive":
            console.print("classify takes the contrastive route on this data: the search varies its keys")
    s.direction = "minimize" if s.metric.endswith(LOWER_IS_BETTER) else "maximize"


def open_study(s: Tuning) -> None:
    optuna = search.require_optuna()
    cfg, final, options = s.cfg, s.final, s.options
    made = not final.exists()
    prepare_output(final, clear=s.deletable, kept=s.user, own_storage=s.ours, named=s.named)
    name = options.study or cfg.task
    fresh = "--study NEW_NAME" + (" (or --overwrite, which deletes this one)" if s.own_storage and s.ours else "")
    try:
        s.study = optuna.create_study(
            storage=storage.open_storage(s.url),
            study_name=name,
            direction=s.direction,
            sampler=search.sampler(cfg.train.seed, cfg.tune.random_trials),
            pruner=search.pruner(cfg.tune),
            load_if_exists=True,
        )
        write_manifest(final, s.ours, s.named)  # study.db is bertkit's from now on (a kill -9 in a trial included)
        check_same_study(s.study, name, s.metric, s.direction)
        check_study_space(s.study, name, s.space, fresh)
        note = check_experiment(s.study, name, experiment_of(cfg, list(s.space), s.protect), fresh)
    except Exception:
        if made and [p.name for p in final.iterdir()] == [outputs.MANIFEST]:
            shutil.rmtree(final, ignore_errors=True)  # made for this run only
        raise
    s.result = TuneResult(final, name, s.url, s.metric, s.direction, notes=[note] if note else [])
    if options.overwrite and not s.deletable:  # the study in the storage the user named goes on
        prepare_output(final, clear=True, kept=s.user, own_storage=s.ours, named=s.named)
        if s.study.trials:
            s.result.notes.append(
                f"--overwrite replaced the reports, not the study: '{name}' in --storage goes on from its "
                f"{len(s.study.trials)} earlier trials (--study NAME starts a new one)"
            )


# a trial's model, trainer and data are freed before the next trial starts (GPU memory above all);
# a full collection costs about 0.3 s in a process that has loaded torch and transformers
GC_AFTER_TRIAL = True


def optimize(s: Tuning):
    """The trials; then the reports, whatever stopped them. Returns the best trial's config."""
    study, options = s.study, s.options
    _announce(study, s.result, s.space, options)
    current: dict = {}  # the number of the trial this process is running
    objective = _objective(s.cfg, s.space, s.metric, s.direction, s.final, current, s.route)
    try:
        with search.user_errors_untraced():
            study.optimize(
                objective,
                n_trials=options.trials,
                timeout=options.timeout,
                callbacks=[_progress_line(s.metric)],
                catch=(*_out_of_memory(), TrainingDiverged),  # a trial that diverged fails alone
                gc_after_trial=GC_AFTER_TRIAL,
            )
    except BaseException as err:  # Ctrl-C, SIGTERM, SIGHUP: Optuna leaves the trial it was running as running
        with contextlib.suppress(Exception):  # a storage that is gone cannot take the trial's end either
            _fail_unfinished(study, current.get("trial"))
        gone = None if isinstance(err, BertkitError | KeyboardInterrupt) else storage.lost(s.url, study.study_name)
        if gone:
            raise BertkitError(
                f"the study storage {storage.shown_url(s.url)} can no longer be read ({gone}); the run stops. The "
                "trials that finished before are in it if it comes back; else start the study again"
            ) from None
        raise
    finally:  # interrupted too: what finished is reported, if the storage still holds it
        best = None
        if storage.lost(s.url, study.study_name) is None:
            with storage.errors_hidden(s.url):
                best = report.write(study, s.cfg, s.result, s.space)
                write_manifest(s.final, s.ours, s.named)
    return best


def _fail_unfinished(study, number: int | None) -> None:
    """Mark the trial of this process that an interruption cut short as failed. Left running, it
    would stay so in the storage for good: counted as under way by every process sharing the
    study, and never finished by a continued one."""
    from optuna.trial import TrialState  # importable: tune() required optuna before starting

    if any(t.number == number for t in study.get_trials(deepcopy=False, states=(TrialState.RUNNING,))):
        study.tell(number, state=TrialState.FAIL)


def metric_of(cfg: Config) -> tuple[str, str | None]:
    """The validation metric the study optimises: tune.metric, else train.metric_for_best_model,
    else the task's own (which may depend on the data: regression or classes, scored pairs...);
    and the route the run takes on the data (classify's `strategy`, None for other tasks)."""

    if cfg.data.train is None:
        raise BertkitError("the config has no data.train: set it to a file path or {hub: NAME}")
    task = get_task(cfg.task)
    with status("reading the data to find the task's metric"):
        raw = task.training.load(cfg)
        info = RunInfo(task.training.setup(raw, cfg))
    check_model(cfg, task, raw)
    given = cfg.tune.metric or cfg.train.metric_for_best_model
    metric = (given or task.training.best_metric(info)).removeprefix("eval_")
    if cfg.tune.metric:
        try:
            check_metric(metric, task.training.metric_names(info), cfg)
        except BertkitError as err:
            raise BertkitError(str(err).replace("train.metric_for_best_model", "tune.metric")) from None
    if cfg.train.eval_strategy == "no":
        console.print("[yellow]train.eval_strategy is no: trials are scored at the end only, none is pruned[/yellow]")
    return metric, info.get("strategy")


def check_model(cfg: Config, task, raw) -> None:
    """The model and tokenizer a trial starts from, found and loaded as `bertkit train` and
    `bertkit smoke` find and load them (`models.resolve`, `training.run.run_tokenizer`): a model
    folder that does not exist is one clear error before the output folder or any trial, not a
    failed trial in a study."""

    source = None
    if not task.training.starts_from_scratch(cfg):
        source = models.resolve(cfg.model.name, cfg.model.revision)
        models.check_max_length(source, cfg, task.training.lengths(cfg))
    with status("loading the tokenizer"):
        run_tokenizer(cfg, task, raw, source)


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
        f"[bold]study {result.study}[/bold] ({storage.shown_url(result.storage)}): "
        f"{result.direction} validation {result.metric}" + (f", continuing after {done} trials" if done else "")
    )
    for key, text in describe(space):
        console.print(f"  {key}: {text}")
    limit = [f"{options.trials} trials"] if options.trials else []
    limit += [f"at most {options.timeout:.0f} s"] if options.timeout else []
    console.print(f"running {' and '.join(limit) or 'until interrupted'} in this process")


def _objective(cfg: Config, space: dict, metric: str, direction: str, final: Path, current: dict, route=None):
    from transformers.utils import logging as hf_logging


    hf_logging.disable_progress_bar()  # no "Writing model shards" bar per trial: one line each
    override = {"train.metric_for_best_model": metric} if cfg.tune.metric else {}
    if route is not None and "classify.strategy" not in space:  # decided once, on the data the config names
        override["classify.strategy"] = route

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

    console.print(f"[bold]retraining the best config[/bold] into {best.output_dir}")
    final = Path(best.output_dir)
    outputs.recover_dir(final)  # before deciding: a bundle put back is one to replace
    replace = final.exists() and (final / outputs.INFO_FILE).is_file()  # an earlier retrained bundle
    return train(best, overwrite=replace, protect=protect)

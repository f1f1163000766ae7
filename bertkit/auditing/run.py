"""`bertkit audit`: the training examples whose label is probably wrong. The examples are split
into k folds; each fold's model is trained as `bertkit train` would train the config (same route,
same settings, on the other folds' examples) and predicts the fold it did not see, so every
example gets probabilities from a model that never read its label; cleanlab then flags the labels
those probabilities contradict (the task's `Audit` part). Folds run one after the other in
`<output>.partial/`, each kept when done, so `--resume` goes on after an interruption; the report
is published whole at the end (report.py)."""

from __future__ import annotations

import json
import shutil
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from bertkit.auditing import folds, report
from bertkit.config import Config, config_class
from bertkit.core import outputs
from bertkit.core.errors import BertkitError
from bertkit.core.extras import install_command
from bertkit.core.progress import console
from bertkit.tasks import get_task
from bertkit.tasks.bundle import open_bundle
from bertkit.training.run import run_inputs, train
from bertkit.training.run_dir import work_dir

DONE = "probabilities.npz"
MARK = ".bertkit-audit"  # in the work folder: bertkit made it (its folds may be replaced)


@dataclass
class AuditOptions:
    folds: int = 5
    resume: bool = False
    overwrite: bool = False
    write_fixed: bool = False  # fixed.jsonl: every example with its flagged label as suggested
    batch_size: int = 64
    protect: tuple = ()  # the config file: never replaced


def require_cleanlab() -> None:
    try:
        import cleanlab  # noqa: F401
    except ImportError:
        fix = install_command("audit")
        raise BertkitError(f"bertkit audit needs cleanlab, which is not installed: {fix}") from None


def audit(cfg: Config, options: AuditOptions) -> report.Report:
    """Audit the training data of `cfg`; the report is written to `cfg.output_dir`."""
    task = get_task(cfg.task)
    if task.audit is None:
        raise BertkitError(
            f"bertkit audit finds wrong labels in classify and ner training data; the {task.name} task has no "
            "labels of that kind. Audit a config with task: classify or task: ner"
        )
    require_cleanlab()
    final = Path(cfg.output_dir)
    work = work_dir(final)
    inputs = run_inputs(cfg, task, options.protect)
    outputs.check_output_dir(final, options.overwrite, inputs, "audit")
    outputs.check_outside_inputs(work, inputs, "the audit's work folder")
    with outputs.OutputLock(final):
        _check_work(work, options)
        examples = task.audit.examples(cfg)
        settings = task.audit.fold_settings(examples)
        assigned = folds.assign(examples, options.folds, cfg.train.seed)
        work.mkdir(parents=True, exist_ok=True)
        (work / MARK).write_text("bertkit audit: the folds done so far\n", encoding="utf-8")
        folds.check_plan(work, {"folds": options.folds, "seed": cfg.train.seed,
                                "examples": folds.fingerprint(examples, {**settings, "config": cfg.dump()})},
                         options.resume)  # fmt: skip
        probabilities = _out_of_fold(cfg, task, examples, settings, assigned, work, options)
        flags = task.audit.issues(examples, probabilities)
        result = report.Report(task.audit, examples, flags, probabilities, options.folds)
        with outputs.staged_dir(final, options.overwrite, "audit", inputs) as staged:
            result.write(staged, options.write_fixed)
        shutil.rmtree(work, ignore_errors=True)
    result.folder = final
    return result


def _check_work(work: Path, options: AuditOptions) -> None:
    """The work folder of an audit cut short: gone on with (--resume) or started afresh
    (--overwrite); a folder bertkit did not make there is never touched."""
    if not work.exists() and not work.is_symlink():
        return
    if work.is_symlink() or not work.is_dir() or not (work / MARK).is_file():
        raise BertkitError(
            f"{work} is in the way of the audit's work folder and was not made by bertkit audit; move it, or "
            "choose another output with -o"
        )
    if options.resume:
        return
    if not options.overwrite:
        raise BertkitError(
            f"an audit stopped before it finished left its folds in {work}: --resume goes on from them, "
            "--overwrite starts afresh"
        )
    shutil.rmtree(work)


def _out_of_fold(cfg: Config, task, examples, settings: dict, assigned: list[int], work: Path, options) -> list:
    """Each example's probabilities from the fold model that held it out (folds done before are
    read back: `--resume`)."""
    probabilities: list = [None] * len(assigned)
    timed = 0
    for fold in range(options.folds):
        folder = work / f"fold-{fold + 1}"
        held = [i for i, f in enumerate(assigned) if f == fold]
        if not (folder / DONE).is_file():
            console.print(f"[bold]fold {fold + 1} of {options.folds}[/bold]: training on {len(assigned) - len(held):,} "
                          f"examples, predicting the {len(held):,} it holds out")  # fmt: skip
            begun = time.perf_counter()
            _run_fold(cfg, task, examples, settings, held, folder, options.batch_size)
            timed += 1
            if timed == 1 and fold + 1 < options.folds:
                took = time.perf_counter() - begun
                left = took * (options.folds - fold - 1)
                console.print(f"fold {fold + 1} took {_duration(took)}: the audit ends in about {_duration(left)} "
                              f"(at {time.strftime('%H:%M', time.localtime(time.time() + left))})")  # fmt: skip
        else:
            console.print(f"fold {fold + 1} of {options.folds}: done before, read back (--resume)")
        saved = np.load(folder / DONE)
        for position, index in enumerate(saved["indices"].tolist()):
            probabilities[index] = saved[f"p{position}"]
    return probabilities


def _run_fold(cfg: Config, task, examples, settings: dict, held: list[int], folder: Path, batch: int):
    """Train on every example but those `held` out (a JSON-lines file of their records), predict
    those, keep their probabilities, and delete the model."""
    if folder.exists():
        shutil.rmtree(folder)  # a fold cut short: started again
    folder.mkdir(parents=True)
    data = folder / "train.jsonl"
    with data.open("w", encoding="utf-8") as out:
        out_of_fold = set(held)
        for index, record in enumerate(examples.records):
            if index not in out_of_fold:
                out.write(json.dumps(record, ensure_ascii=False) + "\n")
    model = folder / "model"
    fold_cfg = _fold_config(cfg, settings, data, model)
    train(fold_cfg, overwrite=True)
    bundle = open_bundle(str(model))
    network = bundle.load_model(task.auto_model)
    found = task.audit.probabilities(network, bundle.load_tokenizer(), bundle.info, examples, held, batch)
    staged = folder / f".{DONE}"
    with staged.open("wb") as out:
        np.savez(out, indices=np.asarray(held), **{f"p{k}": p for k, p in enumerate(found)})
    staged.replace(folder / DONE)  # whole or absent: a fold cut short here is trained again
    shutil.rmtree(model, ignore_errors=True)
    data.unlink()


def _fold_config(cfg: Config, settings: dict, data: Path, model: Path) -> Config:
    """`cfg` for one fold: its training file, no test data, no sample (the examples are sampled
    already), the output in the work folder, and the task's `settings`."""
    dumped = cfg.dump()
    dumped["data"].update(train={"path": str(data), "format": "jsonl"}, test=None, max_train_samples=None)
    dumped["output_dir"] = str(model)
    for key, value in settings.items():
        section, _, name = key.partition(".")
        dumped[section][name] = value
    return config_class().model_validate(dumped)


def _duration(seconds: float) -> str:
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 5400:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"

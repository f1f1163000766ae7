"""The run directory beside the bundle: where checkpoints go while training, what --overwrite and
--resume may do with what is there, and its removal when nothing was kept.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

from bertkit.core import checkpoints, outputs
from bertkit.core.checkpoints import RUN_MARKER, last_complete
from bertkit.core.errors import BertkitError
from bertkit.core.progress import console
from bertkit.core.sharding import is_main


def work_dir(final: Path) -> Path:
    final = Path(os.path.abspath(final))
    return final.with_name(final.name + ".partial")


def mark_run_dir(work: Path, facts: dict | None = None) -> None:
    """Marks `work` as a bertkit run's, with `facts` a resumed run must agree with (`run_facts`)."""

    work.mkdir(parents=True, exist_ok=True)
    recorded = json.dumps(facts) + "\n" if facts else ""
    (work / RUN_MARKER).write_text(f"bertkit run, process {os.getpid()}\n{recorded}", encoding="utf-8")


def run_facts(work: Path) -> dict:
    """The facts the run that made `work` recorded (an older marker has none)."""

    try:
        lines = (work / RUN_MARKER).read_text(encoding="utf-8").splitlines()
        facts = json.loads(lines[1]) if len(lines) > 1 else {}
    except (OSError, ValueError):
        return {}
    return facts if isinstance(facts, dict) else {}


def discard_if_empty(work: Path) -> None:
    """A run that stops before its first complete checkpoint (a full disk can cut the first one
    short) leaves nothing to resume: no `.partial`."""

    if work.is_dir() and last_complete(work)[0] is None and is_main():
        shutil.rmtree(work, ignore_errors=True)


def check_dirs(final: Path, work: Path, overwrite: bool, resume: bool, inputs) -> Path | None:
    """Everything about the output and work directories that can fail, checked before training;
    returns the checkpoint to resume from."""

    if final.exists() and not overwrite:
        what = "the run would replace it when it finishes" if resume else "it would be replaced"
        raise BertkitError(
            f"output directory {final} already exists ({what}); pass --overwrite to replace it, "
            "or choose another with --output-dir"
        )
    outputs.check_output_dir(final, overwrite, inputs, "bundle")
    if work.is_symlink():
        raise BertkitError(
            f"{work} (where this run keeps its checkpoints) is a symbolic link; bertkit does not clear or "
            "write through it. Remove the link, or choose another output"
        )
    if resume and work.is_dir() and any(work.iterdir()) and not (work / checkpoints.RUN_MARKER).is_file():
        raise BertkitError(
            f"--resume: {work} was not made by a bertkit run (it has no {checkpoints.RUN_MARKER}); bertkit "
            "resumes only its own runs. Move it away and start without --resume"
        )
    if work.is_dir():
        # a finished run removes its work directory, so what bertkit did not put there (a
        # notes file, a checkpoint-backup/) stops a resumed run as much as a fresh one
        foreign = checkpoints.foreign_files(work)
        if foreign:
            shown = ", ".join(foreign[:5]) + (f" and {len(foreign) - 5} more" if len(foreign) > 5 else "")
            raise BertkitError(
                f"{work} (where this run keeps its checkpoints) holds files bertkit did not write ({shown}); "
                "move them away to start this run"
            )
    if resume:
        found, broken = checkpoints.last_complete(work)
        if found is None:
            why = f" ({len(broken)} incomplete one(s) found)" if broken else ""
            raise BertkitError(
                f"--resume: there is no complete checkpoint to resume from in {work}{why}; start again without --resume"
            )
        for folder in broken:
            console.print(
                f"[yellow]note:[/yellow] {folder.name} was not completely written (a full disk or an interrupted "
                "save?); it is removed"
            )
            if is_main():
                shutil.rmtree(folder, ignore_errors=True)
        console.print(f"resuming from {found.name}")
        return found
    if work.exists():
        foreign = [] if work.is_dir() else [work.name]
        if foreign:
            shown = ", ".join(foreign[:5]) + (f" and {len(foreign) - 5} more" if len(foreign) > 5 else "")
            raise BertkitError(
                f"{work} (where this run keeps its checkpoints) holds files bertkit did not write ({shown}); "
                "move them away to start this run"
            )
        found, _ = checkpoints.last_complete(work)
        if found is not None and not overwrite:
            raise BertkitError(
                f"an unfinished run left checkpoints in {work} (last complete: {found.name}): pass --resume to "
                "continue it, or --overwrite to start again"
            )
        if is_main():
            shutil.rmtree(work)
    return None

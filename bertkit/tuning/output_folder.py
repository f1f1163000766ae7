"""A study's output folder: which of its files are bertkit's (the reports, study.db when bertkit
made it) and which the user's (a storage named with --storage, never deleted), recorded in its
manifest; the folder checked before a study starts, and made ready (swept, or emptied with
--overwrite of all but the user's)."""

from __future__ import annotations

import contextlib
import json
import os
import time
from pathlib import Path

from bertkit.core import outputs
from bertkit.core.errors import BertkitError
from bertkit.core.outputs.files import contains, host, is_leftover, pid_alive
from bertkit.tuning import report, storage
from bertkit.tuning.report import REPORTS

KIND = "tune"  # the manifest's kind for a tune output folder


def claim_output(s) -> None:
    """Whose each file of the study's output folder is (on `s`, a `study.Tuning`), and the folder
    checked: what bertkit wrote stays bertkit's; what the user named is never deleted: the default
    study.db is bertkit's when bertkit made it (listed in the manifest, or new), never when a
    --storage named it first."""
    final, own_storage = s.final, s.own_storage
    stored = storage.sqlite_files(s.url)  # the storage's files
    listed, named = manifest_files(final)
    s.ours = storage.STUDY_FILE in listed or (own_storage and storage.STUDY_FILE not in named)
    if not own_storage and stored and contains(final.resolve(), stored[0]):  # the user's, recorded as such
        named = {*named, stored[0].relative_to(final.resolve()).as_posix()}
    s.named = sorted(named - {storage.STUDY_FILE} if s.ours else named)
    mine = [final / n for n in storage.companions(storage.STUDY_FILE)] if s.ours else []
    s.user = [] if own_storage and s.ours else stored  # the user's storage files: kept, with the folders above them
    s.deletable = s.options.overwrite and own_storage and s.ours  # --overwrite replaces bertkit's study.db too
    # the reports are tune's by their names too: a kill -9 between writing them and the manifest
    allowed = [*mine, *s.user, *_beside(final, s.user), *(final / n for n in report.REPORTS)]
    check_output(final, s.options.overwrite, s.protect, allowed=allowed)
    if s.options.retrain_best:  # best/ checked now, not after the whole study
        check_retrain_target(final / "best", s.protect)


def check_output(final: Path, overwrite: bool, protect, allowed) -> None:
    """The output folder may be used: new, empty, or a tune output (which --overwrite may replace)
    holding nothing but bertkit's files and the study storage's (`allowed`)."""
    if final.exists() and not overwrite:
        try:
            # would --overwrite be allowed? then it is ours
            outputs.check_output_dir(final, True, protect, KIND, allowed)
        except BertkitError as err:
            raise BertkitError(f"{err} (a study continues only in a folder that bertkit tune wrote)") from None
        return
    outputs.check_output_dir(final, overwrite, protect, KIND, allowed)


def prepare_output(final: Path, clear: bool, kept, own_storage: bool, named=()) -> None:
    """The output folder, made (with a manifest, so that it is bertkit's from the start) or, with
    `clear`, emptied of all but `kept` (the user's study storage, never deleted) and every folder
    on the way to it (with all it holds: the user's). `own_storage`: study.db is bertkit's."""
    if final.is_dir():  # what killed runs were deleting (`.NAME.trash-PID-*`) or writing: swept
        for item in final.iterdir():
            if is_leftover(item.name) and ".trash-" in item.name:
                outputs.discard(item)
    if clear and final.is_dir():
        keep = [Path(k).resolve() for k in kept]
        for item in final.iterdir():
            if item.name == outputs.MANIFEST or is_leftover(item.name):
                continue
            if any(contains(item.resolve(), k) for k in keep):
                continue
            # deleted as trash (`.NAME.trash-PID-*`), the manifest kept to the end: a kill -9
            # midway leaves a folder that is still bertkit's, and nothing that could be put back
            outputs.discard(item)
    final.mkdir(parents=True, exist_ok=True)
    write_manifest(final, own_storage, named)


def manifest_files(final: Path) -> tuple[set, set]:
    """The files the manifest of `final` lists as bertkit's (study.db among them when bertkit made
    it: a --storage naming it later does not make it the user's), and those it records as the
    user's (a storage named with --storage inside the folder: never bertkit's, never deleted)."""
    import json

    try:
        record = json.loads((final / outputs.MANIFEST).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return set(), set()
    if not isinstance(record, dict):
        return set(), set()
    listed, named = record.get("files"), record.get("user_storage")
    return (set(listed) if isinstance(listed, list) else set()), (set(named) if isinstance(named, list) else set())


def write_manifest(final: Path, own_storage: bool, named=()) -> None:
    """The manifest lists what bertkit tune writes there: the reports, and study.db when bertkit
    made it (`own_storage`), never a storage the user named with --storage nor anything else;
    `named`: the user's storage files in the folder, recorded so that they stay the user's."""

    names = [*REPORTS, *(storage.companions(storage.STUDY_FILE) if own_storage else ())]
    files = [n for n in names if (final / n).is_file()]
    outputs.write_manifest(final, KIND, files=files, user_storage=sorted(named))


def _beside(final: Path, kept) -> list[Path]:
    """The files of the folders on the way from `final` to a kept storage file (sub/my.db): kept
    with it, never deleted, so not counted against the folder either."""
    top = {final.resolve() / Path(k).resolve().relative_to(final.resolve()).parts[0] for k in kept
           if contains(final.resolve(), Path(k).resolve()) and Path(k).resolve() != final.resolve()}  # fmt: skip
    return [p for folder in top if folder.is_dir() for p in folder.rglob("*") if p.is_file()]


def check_retrain_target(best: Path, protect) -> None:
    """--retrain-best's folder checked before any trial: a bundle moved aside by a killed run is
    put back first, then it must be new or an earlier retrained bundle (which it replaces)."""
    outputs.recover_dir(best)
    outputs.check_output_dir(best, best.exists(), protect, "bundle")


class StudyUsers:
    """The `bertkit tune` processes running a study in an output folder: each keeps a file beside
    the folder (`.NAME.tune-HOST-PID`, process id, host and start) while it runs. Several may share
    a study; `--overwrite`, which deletes bertkit's study.db and every trial folder, is refused
    while another one runs (it deleted the study under it), naming it."""

    def __init__(self, final: Path):
        self.final = Path(os.path.abspath(final))
        self.mine = self.final.with_name(f".{self.final.name}.tune-{host()}-{os.getpid()}")

    def others(self) -> list[dict]:
        """The other processes running the study now; files of processes that are gone (on this
        host) are removed."""
        found = []
        for path in sorted(self.final.parent.glob(f".{self.final.name}.tune-*")):
            if path == self.mine:
                continue
            try:
                user = json.loads(path.read_text(encoding="utf-8"))
            except (OSError, ValueError):
                continue  # being written: it joins after the set-up lock is released
            if not isinstance(user, dict):
                continue
            if user.get("host") == host() and isinstance(user.get("pid"), int) and not pid_alive(user["pid"]):
                with contextlib.suppress(OSError):
                    path.unlink()
                continue
            found.append({**user, "file": str(path)})
        return found

    def join(self) -> None:
        started = time.strftime("%Y-%m-%dT%H:%M:%S%z")
        outputs.write_json(self.mine, {"pid": os.getpid(), "host": host(), "started": started})

    def leave(self) -> None:
        with contextlib.suppress(OSError):
            self.mine.unlink()

    def refuse_overwrite(self) -> None:
        """--overwrite while another process runs the study: refused, naming it."""
        others = self.others()
        if others:
            shown = "; ".join(f"process {u.get('pid')} on {u.get('host')}, since {u.get('started')}" for u in others)
            raise BertkitError(
                f"--overwrite: the study in {self.final} is in use ({shown}); overwriting it would delete the study "
                "and its trial folders under that run. Wait for it to finish, or start another study (--study "
                f"NAME, or another output). If that run is gone, delete {others[0]['file']}."
            )

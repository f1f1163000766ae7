"""A lock per output, so that one run at a time writes it."""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
import time
from pathlib import Path

from bertkit.core.errors import BertkitError
from bertkit.core.outputs.files import cannot_write, ensure_folder, follow_umask, host, pid_alive, tmp_prefix
from bertkit.core.progress import console

LOCK_UNREADABLE_AFTER = 60  # seconds after which a lock that cannot be read is taken over


# ---------------------------------------------------------------- a lock per output


class OutputLock:
    """`.NAME.lock` beside an output: one run at a time writes it. The lock records the owner's
    process id and host; a lock whose process is gone (same host) is stale and is taken over."""

    def __init__(self, target: Path):
        self.target = Path(os.path.abspath(target))
        if not self.target.name:
            raise BertkitError(f"output directory {target} is the root of the file system; choose a folder for it")
        self.path = self.target.with_name(f".{self.target.name}.lock")
        self.held = False

    def acquire(self) -> OutputLock:

        ensure_folder(self.path.parent, self.target)
        mine = {"pid": os.getpid(), "host": host(), "started": time.strftime("%Y-%m-%dT%H:%M:%S%z")}
        for _ in range(3):
            try:
                created = self._create(mine)
            except OSError as err:  # a place that cannot be written (/proc), a full disk
                raise cannot_write(err, self.target) from None
            if created:
                self.held = True
                return self
            owner = self._owner()
            if owner is None and not self._abandoned():
                raise BertkitError(
                    f"another bertkit run seems to be writing {self.target}: its lock {self.path} cannot be read "
                    f"(it may be starting). Try again in a minute; if no run is going, delete {self.path}."
                ) from None
            if owner is not None and not self._stale(owner):
                raise BertkitError(
                    f"another bertkit run is writing {self.target} (process {owner.get('pid')} on "
                    f"{owner.get('host')}, since {owner.get('started')}). Wait for it to finish, or choose "
                    f"another output. If that run is gone, delete {self.path}."
                ) from None
            gone = f"process {owner.get('pid')}, which no longer runs" if owner else "a run that never wrote it out"
            console.print(f"[yellow]note:[/yellow] taking over the lock of {self.target} left by {gone}")
            with contextlib.suppress(FileNotFoundError):
                self.path.unlink()
        raise BertkitError(f"could not take the lock {self.path}; try again")

    def _create(self, owner: dict) -> bool:
        """Make the lock file with its content in one step (written beside it, then hard-linked
        into place: no other run ever sees it empty). False when it exists."""
        fd, name = tempfile.mkstemp(prefix=tmp_prefix(self.path.name), dir=self.path.parent)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                json.dump(owner, handle)
            follow_umask(Path(name))
            try:
                os.link(name, self.path)
            except FileExistsError:
                return False
            except OSError:  # no hard links here: create, then write (unreadable for an instant)
                try:
                    lock = os.open(self.path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o666)
                except FileExistsError:
                    return False
                try:
                    with os.fdopen(lock, "w", encoding="utf-8") as handle:
                        json.dump(owner, handle)
                except OSError:
                    with contextlib.suppress(OSError):
                        self.path.unlink()
                    raise
            return True
        finally:
            with contextlib.suppress(OSError):
                os.unlink(name)

    def _abandoned(self) -> bool:
        """An unreadable lock (from a file system without hard links, or damaged) counts as held
        unless nobody has touched it for a while."""
        try:
            return time.time() - self.path.stat().st_mtime > LOCK_UNREADABLE_AFTER
        except OSError:
            return True

    def _owner(self) -> dict | None:
        try:
            owner = json.loads(self.path.read_text(encoding="utf-8"))
            return owner if isinstance(owner, dict) else None
        except (OSError, ValueError):
            return None

    @staticmethod
    def _stale(owner: dict) -> bool:
        pid = owner.get("pid")
        return owner.get("host") == host() and isinstance(pid, int) and not pid_alive(pid)

    def release(self) -> None:
        if self.held:
            with contextlib.suppress(FileNotFoundError):
                self.path.unlink()
            self.held = False

    def __enter__(self) -> OutputLock:
        return self.acquire()

    def __exit__(self, *exc) -> None:
        self.release()

"""Files written whole or not at all: temporaries beside the target renamed into place, leftovers of
killed processes swept, the user's umask followed, and failed writes turned into one clear error."""

from __future__ import annotations

import contextlib
import errno
import io
import os
import re
import shutil
import socket
import stat
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

from bertkit.core.errors import BertkitError
from bertkit.core.outputs import strict_json
from bertkit.core.progress import console

# `.NAME.tmp-PID-*`: being written; `.NAME.old-PID`: a whole old directory moved aside to be
# replaced (put back if nothing replaced it); `.NAME.trash-PID-*`: being deleted (never put back)
_LEFTOVER = re.compile(r"\..+\.(?:tmp-(\d+)-.*|old-(\d+)|trash-(\d+)-.*)")
# how a failed write reads when a library reports it without an errno (safetensors, numpy)
WRITE_FAILURES = {
    "No space left on device": "No space left on device",
    "StorageFull": "No space left on device",  # Rust's io::ErrorKind, as safetensors prints it
    "os error 28": "No space left on device",
    "Disk quota exceeded": "Disk quota exceeded",
    "QuotaExceeded": "Disk quota exceeded",
    "Read-only file system": "Read-only file system",
    "ReadOnlyFilesystem": "Read-only file system",
}
# torch.save's C++ writer reports a failed write without its reason
TORCH_WRITE_FAILURES = ("PytorchStreamWriter failed", "inline_container.cc", "iostream error")
WRITE_ERRORS = {errno.ENOSPC, errno.EDQUOT, errno.EACCES, errno.EPERM, errno.EROFS, errno.EIO, errno.EFBIG}


# ---------------------------------------------------------------- processes and permissions


def host() -> str:
    return socket.gethostname() or "localhost"


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # alive, owned by someone else
        return True
    except OSError:
        return False
    return True


def _umask() -> int:
    current = os.umask(0)
    os.umask(current)
    return current


def follow_umask(path: Path, directory: bool = False) -> None:
    """Give a file or directory made by mkstemp / mkdtemp (0600 / 0700) the permissions any other
    new file of the user would get."""
    base = 0o777 if directory else 0o666
    os.chmod(path, base & ~_umask())


def follow_umask_tree(folder: Path) -> None:
    """Every file and folder under `folder` made to follow the umask (libraries write some files
    0600, such as safetensors weights, which would make a shared model unreadable to others)."""
    for item in folder.rglob("*"):
        if not item.is_symlink():
            follow_umask(item, directory=item.is_dir())


def tmp_prefix(name: str) -> str:
    return f".{name}.tmp-{os.getpid()}-"


def is_temporary(name: str) -> bool:
    """Whether `name` is a bertkit writer's temporary (`.NAME.tmp-PID-*`, `.NAME.old-PID`,
    `.NAME.trash-PID-*`), its process running or not: bertkit's, never the user's (a running one's
    is work in progress, which no `--overwrite` check may call a file bertkit did not write)."""
    return _LEFTOVER.fullmatch(name) is not None


def is_leftover(name: str) -> bool:
    """Whether `name` is a temporary (`.NAME.tmp-PID-*`, `.NAME.old-PID`, `.NAME.trash-PID-*`) of
    a bertkit writer that no longer runs."""
    match = _LEFTOVER.fullmatch(name)
    if not match:
        return False
    pid = int(match.group(1) or match.group(2) or match.group(3))
    return pid != os.getpid() and not pid_alive(pid)


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    else:
        with contextlib.suppress(OSError):
            path.unlink()


def discard(path: Path) -> None:
    """Delete a file or folder, first renamed to `.NAME.trash-PID-*`: a process killed while
    deleting it leaves a leftover that sweeping removes and that `recover_dir` never puts back (a
    half-deleted bundle is not a bundle). The one way bertkit deletes what it replaces."""
    path = Path(path)
    if not path.exists() and not path.is_symlink():
        return
    trash = path.with_name(f".{path.name}.trash-{os.getpid()}-{os.urandom(4).hex()}")
    path.rename(trash)
    if trash.is_dir() and not trash.is_symlink():
        shutil.rmtree(trash, ignore_errors=True)
        if trash.exists():  # a file that would not go: the error, as rmtree gives it
            shutil.rmtree(trash)
    else:
        trash.unlink()


def sweep_stale(folder: Path, name: str) -> None:
    """Remove what writers of `folder/name` that no longer run left behind (`.NAME.tmp-PID-*`,
    `.NAME.old-PID`, `.NAME.trash-PID-*`), so a process killed mid-write leaves no lasting debris; an old directory
    that nothing replaced is put back first (`recover_dir`)."""
    if not folder.is_dir():
        return
    recover_dir(folder / name)
    for kind in ("tmp", "old", "trash"):
        for leftover in folder.glob(f".{glob_escape(name)}.{kind}-*"):
            if is_leftover(leftover.name):
                _remove(leftover)


def recover_dir(final: Path) -> None:
    """Put back a directory that a killed writer had moved aside to replace it (`.NAME.old-PID`, of
    a process that no longer runs: `dirs.publish_dir` where directories cannot be exchanged) when
    nothing took its place; the newest such copy wins, and the others are swept as leftovers.
    What was being deleted (`.NAME.trash-PID-*`, `discard`) is never put back."""
    final = Path(final)
    if final.exists() or final.is_symlink() or not final.parent.is_dir():
        return
    aside = [p for p in final.parent.glob(f".{glob_escape(final.name)}.old-*") if p.is_dir() and is_leftover(p.name)]
    if not aside:
        return
    newest = max(aside, key=lambda p: p.stat().st_mtime)
    try:
        newest.rename(final)
    except OSError:
        return

    console.print(f"[yellow]note:[/yellow] put back {final}, which a run killed while replacing it had moved aside")


def glob_escape(name: str) -> str:
    return "".join(f"[{c}]" if c in "*?[" else c for c in name)


def writing_failed(err: BaseException, path, after: str = "Nothing was written there.") -> BertkitError | None:
    """A clear error for an exception that means the file system refused a write: an OSError
    with such an errno, the plain Exception ending in `(os error N)` that Rust libraries
    (tokenizers) raise, or a library's error that says so in words (safetensors reports a full
    disk as `IoError(Os { code: 28, ... })`)."""
    if isinstance(err, BertkitError):
        return None
    if isinstance(err, OSError) and err.errno in WRITE_ERRORS:
        return BertkitError(f"cannot write {path}: {err.strerror or err}. {after}")
    rust = re.fullmatch(r"(.*) \(os error (\d+)\)", str(err).strip()) if type(err) is Exception else None
    if rust and int(rust[2]) in WRITE_ERRORS:
        return BertkitError(f"cannot write {path}: {rust[1]}. {after}")
    text = str(err)
    for words, reason in WRITE_FAILURES.items():
        if words in text:
            return BertkitError(f"cannot write {path}: {reason}. {after}")
    if isinstance(err, RuntimeError) and any(words in text for words in TORCH_WRITE_FAILURES):
        reason = "No space left on device" if _nearly_full(path) else "the write failed (torch.save)"
        return BertkitError(f"cannot write {path}: {reason}. {after}")
    return None


def _nearly_full(path) -> bool:
    """Whether the file system holding `path` (or its nearest existing folder) has less than
    1 MiB left: what a write that failed without saying why most likely met."""
    place = Path(path)
    while not place.exists() and place != place.parent:
        place = place.parent
    try:
        usage = os.statvfs(place)
    except OSError:
        return False
    return usage.f_bavail * usage.f_frsize < 1 << 20


def cannot_write(err: OSError, target) -> BertkitError:
    """One clear error for a place `target` cannot be written, naming a file that stands where a
    folder is needed (`-o notes.txt/out`) rather than the system's "File exists"."""
    for parent in Path(target).parents:
        if parent.exists() or parent.is_symlink():
            if not parent.is_dir():
                return BertkitError(f"cannot write {target}: {parent} is a file, not a folder. Choose another output.")
            break
    return writing_failed(err, target) or BertkitError(f"cannot write {target}: {err.strerror or err}")


def contains(folder: Path, inner: Path) -> bool:
    return inner == folder or folder in inner.parents


# ---------------------------------------------------------------- files


def _is_special(path: Path) -> bool:
    """A FIFO, socket or device: written in place, since it cannot be replaced by a rename."""
    try:
        mode = path.stat().st_mode
    except OSError:
        return False
    return not stat.S_ISREG(mode) and not stat.S_ISDIR(mode)


def no_link_loop(path) -> None:
    """A symbolic link that leads back to itself names no place to write: an error saying so,
    not a traceback from resolving it."""
    given = Path(path)
    if not given.is_symlink():
        return
    try:
        os.stat(given)
    except OSError as err:
        if err.errno == errno.ELOOP:
            raise BertkitError(
                f"{path} is a symbolic link that leads back to itself (a loop); remove it or choose another output"
            ) from None


def check_output_file(
    path: str | None,
    *inputs: str | None,
    replace: bool = True,
    example: str = "results.jsonl",
    flag: str = "--output",
) -> None:
    """Fail before any work when `path` cannot be a result file: an existing directory, one of
    the command's own inputs (which writing would destroy), or a place that cannot be written.
    With `replace` false, an existing file is refused too (one the user may have written by
    hand, such as a config: `--overwrite` allows it)."""
    if path in (None, "-"):
        return
    no_link_loop(path)
    target = Path(path)
    if target.is_dir():
        raise BertkitError(f"{flag} {path} is a directory; give a file name, e.g. {Path(path) / example}")
    if not replace and target.is_file():
        raise BertkitError(f"{path} already exists; pass --overwrite to replace it, or choose another name")
    if not _is_special(target):
        check_writable(target)
    for source in inputs:
        if source in (None, "-") or not Path(source).exists():
            continue
        if Path(source).is_dir() and contains(Path(source).resolve(), target.resolve()):
            raise BertkitError(
                f"{flag} {path} is inside {source}, an input of this command; writing there would change it. "
                "Choose an output outside it."
            )
        if not target.exists():
            continue
        with contextlib.suppress(OSError):
            if os.path.samefile(source, target) and not _is_special(target):
                raise BertkitError(
                    f"{flag} {path} is the input file itself; writing it would destroy the input. "
                    "Choose another output name."
                )


def check_writable(target: Path) -> None:
    """Create (and remove) a temporary file where `target` would be written; folders made for
    the test are removed again, so a refused command leaves nothing behind."""
    real = Path(os.path.realpath(target)) if target.is_symlink() else Path(target)
    made = []
    try:
        ensure_folder(real.parent, target, made)
        fd, name = tempfile.mkstemp(prefix=tmp_prefix(real.name), dir=real.parent)
        os.close(fd)
        os.unlink(name)
    except OSError as err:
        raise cannot_write(err, target) from None
    finally:
        for folder in reversed(made):
            with contextlib.suppress(OSError):
                folder.rmdir()


def ensure_folder(folder: Path, target, made: list | None = None) -> None:
    """Create `folder` (and its parents) for writing `target`; a parent that is a file is a clear
    error. `made` collects the folders created, outermost first."""
    missing = []
    for parent in [folder, *folder.parents]:
        if parent.is_dir():
            break
        if parent.exists() or parent.is_symlink():
            raise BertkitError(f"cannot write {target}: {parent} is a file, not a folder. Choose another path.")
        missing.append(parent)
    for parent in reversed(missing):
        parent.mkdir()
        if made is not None:
            made.append(parent)


@contextlib.contextmanager
def atomic_path(path: str | Path) -> Iterator[Path]:
    """A temporary file beside `path` that replaces it when the block ends without error.

    A symbolic link is followed (the link stays, the file it points to is replaced); a FIFO or a
    device receives the finished file's bytes. The new file keeps the mode of the one it replaces,
    or follows the umask."""
    given = Path(path)
    no_link_loop(given)
    if given.is_dir():
        raise BertkitError(f"{path} is a directory; give a file name")
    target = Path(os.path.realpath(given)) if given.is_symlink() else given
    special = _is_special(target)
    folder = target.parent
    try:
        ensure_folder(folder, path)
        sweep_stale(folder, target.name)
        fd, name = tempfile.mkstemp(prefix=tmp_prefix(target.name), dir=folder)
        os.close(fd)
    except OSError as err:
        raise cannot_write(err, path) from None
    tmp = Path(name)
    try:
        if target.exists() and not special:
            os.chmod(tmp, stat.S_IMODE(target.stat().st_mode))
        else:
            follow_umask(tmp)
        yield tmp
        if special:
            with open(tmp, "rb") as source, open(target, "wb") as sink:
                shutil.copyfileobj(source, sink, 1 << 20)
            tmp.unlink()
        else:
            os.replace(tmp, target)
    except BaseException as err:
        with contextlib.suppress(OSError):
            tmp.unlink()
        failed = writing_failed(err, path)
        if failed:
            raise failed from None
        raise


@contextlib.contextmanager
def atomic_text(path: str | None):
    """A text handle that becomes `path` only when the block ends without error (stdout for
    None / '-'; a FIFO or device is written as the results come)."""
    if path in (None, "-"):
        stream = io.TextIOWrapper(sys.stdout.buffer, encoding="utf-8", newline="", write_through=True)
        try:
            yield stream
        finally:
            with contextlib.suppress(ValueError):
                stream.flush()
            stream.detach()
        return
    given = Path(path)
    if not given.is_dir() and _is_special(given):
        try:
            with open(given, "w", encoding="utf-8", newline="") as handle:
                yield handle
        except OSError as err:
            raise writing_failed(err, path) or err from None
        return
    with atomic_path(given) as tmp:
        with open(tmp, "w", encoding="utf-8", newline="") as handle:
            yield handle


def write_json(path: Path, data, undefined_as_null: bool = False, sync: bool = False) -> None:
    """`data` as strict JSON (`strict_json`: NaN and infinities are refused, naming the field), or
    with `undefined_as_null` (files of metrics, where a number may be undefined on the data) each
    of them written as null and listed under `"undefined"`. Checked before anything is written.
    `sync`: flushed to the disk before it replaces the old file (a file that says which others are
    current: a power cut must not leave it empty)."""

    if undefined_as_null:
        data = strict_json.undefined_as_null(data)
    text = strict_json.dumps(data, str(path), indent=2, ensure_ascii=False)
    with atomic_text(str(path)) as handle:
        handle.write(text + "\n")
        if sync:
            handle.flush()
            os.fsync(handle.fileno())

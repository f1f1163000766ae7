"""Writing results so that nothing is lost and nothing is half-written.

- Files and directories are written under a temporary name beside their target and renamed into
  place only when complete; the temporary names carry the writer's process id, so leftovers of
  a process that was killed (`kill -9`) are recognised and removed by the next write.
- `--overwrite` replaces only a directory that bertkit wrote (each one carries a manifest of its
  files, `MANIFEST`), never the current directory, the home directory or a directory holding the
  run's own data, and never files that bertkit did not put there.
- Results follow the user's umask; writing to a symbolic link writes to the file it points to,
  and writing to a FIFO or a device (`/dev/stdout`) writes straight into it.
- Failures to write (full disk, no permission, read-only file system) become one clear error,
  with nothing left behind.

Also the prediction writers (JSON lines, CSV, TSV, CoNLL, SQuAD) shared by every task.
"""

from __future__ import annotations

import contextlib
import csv
import errno
import glob as globmod
import io
import json
import os
import re
import shutil
import socket
import stat
import sys
import tempfile
import time
from collections.abc import Iterable, Iterator
from pathlib import Path

from bertkit.errors import BertkitError

OUTPUT_FORMATS = ("jsonl", "csv", "tsv", "conll", "squad")
MANIFEST = ".bertkit-output.json"  # what bertkit wrote into a directory it published
INFO_FILE = "bertkit.json"  # a bundle's description (bundles from before the manifest have only this)
_LEFTOVER = re.compile(r"\..+\.(?:tmp-(\d+)-.*|old-(\d+))")
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
LOCK_UNREADABLE_AFTER = 60  # seconds after which a lock that cannot be read is taken over
WRITE_ERRORS = {errno.ENOSPC, errno.EDQUOT, errno.EACCES, errno.EPERM, errno.EROFS, errno.EIO, errno.EFBIG}


# ---------------------------------------------------------------- processes and permissions


def _host() -> str:
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


def _tmp_prefix(name: str) -> str:
    return f".{name}.tmp-{os.getpid()}-"


def is_leftover(name: str) -> bool:
    """Whether `name` is a temporary (`.NAME.tmp-PID-*`, `.NAME.old-PID`) of a bertkit writer
    that no longer runs."""
    match = _LEFTOVER.fullmatch(name)
    if not match:
        return False
    pid = int(match.group(1) or match.group(2))
    return pid != os.getpid() and not pid_alive(pid)


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    else:
        with contextlib.suppress(OSError):
            path.unlink()


def sweep_stale(folder: Path, name: str) -> None:
    """Remove what writers of `folder/name` that no longer run left behind (`.NAME.tmp-PID-*`,
    `.NAME.old-PID`), so a process killed mid-write leaves no lasting debris."""
    if not folder.is_dir():
        return
    for kind in ("tmp", "old"):
        for leftover in folder.glob(f".{glob_escape(name)}.{kind}-*"):
            if is_leftover(leftover.name):
                _remove(leftover)


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
    return None


def cannot_write(err: OSError, target) -> BertkitError:
    """One clear error for a place `target` cannot be written, naming a file that stands where a
    folder is needed (`-o notes.txt/out`) rather than the system's "File exists"."""
    for parent in Path(target).parents:
        if parent.exists() or parent.is_symlink():
            if not parent.is_dir():
                return BertkitError(f"cannot write {target}: {parent} is a file, not a folder. Choose another output.")
            break
    return writing_failed(err, target) or BertkitError(f"cannot write {target}: {err.strerror or err}")


# ---------------------------------------------------------------- files


def _is_special(path: Path) -> bool:
    """A FIFO, socket or device: written in place, since it cannot be replaced by a rename."""
    try:
        mode = path.stat().st_mode
    except OSError:
        return False
    return not stat.S_ISREG(mode) and not stat.S_ISDIR(mode)


def check_output_file(
    path: str | None, *inputs: str | None, replace: bool = True, example: str = "results.jsonl"
) -> None:
    """Fail before any work when `path` cannot be a result file: an existing directory, one of
    the command's own inputs (which writing would destroy), or a place that cannot be written.
    With `replace` false, an existing file is refused too (one the user may have written by
    hand, such as a config: `--overwrite` allows it)."""
    if path in (None, "-"):
        return
    target = Path(path)
    if target.is_dir():
        raise BertkitError(f"--output {path} is a directory; give a file name, e.g. {Path(path) / example}")
    if not replace and target.is_file():
        raise BertkitError(f"{path} already exists; pass --overwrite to replace it, or choose another name")
    if not _is_special(target):
        check_writable(target)
    for source in inputs:
        if source in (None, "-") or not Path(source).exists():
            continue
        if Path(source).is_dir() and _contains(Path(source).resolve(), target.resolve()):
            raise BertkitError(
                f"--output {path} is inside {source}, an input of this command; writing there would change it. "
                "Choose an output outside it."
            )
        if not target.exists():
            continue
        with contextlib.suppress(OSError):
            if os.path.samefile(source, target) and not _is_special(target):
                raise BertkitError(
                    f"--output {path} is the input file itself; writing it would destroy the input. "
                    "Choose another output name."
                )


def check_writable(target: Path) -> None:
    """Create (and remove) a temporary file where `target` would be written; folders made for
    the test are removed again, so a refused command leaves nothing behind."""
    real = Path(os.path.realpath(target)) if target.is_symlink() else Path(target)
    made = []
    try:
        ensure_folder(real.parent, target, made)
        fd, name = tempfile.mkstemp(prefix=_tmp_prefix(real.name), dir=real.parent)
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
    if given.is_dir():
        raise BertkitError(f"{path} is a directory; give a file name")
    target = Path(os.path.realpath(given)) if given.is_symlink() else given
    special = _is_special(target)
    folder = target.parent
    try:
        ensure_folder(folder, path)
        sweep_stale(folder, target.name)
        fd, name = tempfile.mkstemp(prefix=_tmp_prefix(target.name), dir=folder)
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


def write_json(path: Path, data) -> None:
    with atomic_text(str(path)) as handle:
        json.dump(data, handle, indent=2, ensure_ascii=False)
        handle.write("\n")


# ---------------------------------------------------------------- directories


def _contains(folder: Path, inner: Path) -> bool:
    return inner == folder or folder in inner.parents


# what a bundle written before manifests could hold (its own files are recognised by name)
LEGACY_BUNDLE_FILES = (
    "bertkit.json", "metrics.json", "README.md", "config.json", "generation_config.json",
    "*.safetensors", "model.safetensors.index.json", "pytorch_model*.bin", "training_args.bin",
    "tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "added_tokens.json",
    "vocab.txt", "vocab.json", "merges.txt", "spiece.model", "sentencepiece.bpe.model",
    "chat_template.jinja", "training_curves.png", "confusion_matrix.png", "per_type_f1.png",
    "modules.json", "config_sentence_transformers.json", "sentence_bert_config.json",
    "1_Pooling/config.json",
)  # fmt: skip


def _manifest(folder: Path) -> dict | None:
    """The manifest of a directory bertkit published (a legacy bundle gets one made up from its
    known files), or None."""
    manifest = folder / MANIFEST
    if manifest.is_file():
        try:
            record = json.loads(manifest.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        files = record.get("files") if isinstance(record, dict) else None
        if not isinstance(files, list):
            return None
        return {"kind": record.get("kind", "bundle"), "files": {str(f) for f in files}}
    if (folder / INFO_FILE).is_file():  # a bundle from before manifests: bertkit's by its description
        known = {
            p.relative_to(folder).as_posix()
            for pattern in LEGACY_BUNDLE_FILES
            for p in folder.glob(pattern)
            if p.is_file()
        }
        return {"kind": "bundle", "files": known}
    return None


def _owned(folder: Path) -> tuple[bool, list[str]]:
    """Whether bertkit wrote `folder`, and the files in it that bertkit did not write."""
    record = _manifest(folder)
    if record is None:
        return False, []
    return True, _unlisted(folder, folder, record["files"])


def _unlisted(root: Path, folder: Path, listed: set[str]) -> list[str]:
    extra = []
    for item in sorted(folder.iterdir()):
        relative = item.relative_to(root).as_posix()
        if item.name == MANIFEST or relative in listed or is_leftover(item.name):
            continue
        if item.is_dir() and not item.is_symlink():
            if (item / MANIFEST).is_file() and _owned(item) == (True, []):
                continue  # something bertkit published inside (an evaluation of this bundle)
            extra += _unlisted(root, item, listed)
        else:
            extra.append(relative)
    return extra


def _inputs(protect: Iterable[str | Path]) -> Iterator[Path]:
    """The existing paths among `protect`, globs expanded."""
    for item in protect:
        if not item:
            continue
        text = str(item)
        if any(c in text for c in "*?["):
            yield from (Path(p) for p in globmod.glob(os.path.expanduser(text), recursive=True))
        elif Path(text).expanduser().exists():
            yield Path(text).expanduser()


def _refusal(path: Path, protect: Iterable[str | Path], kind: str | None = None) -> str | None:
    """Why `path` must not be replaced by --overwrite, or None when it may be."""
    real = path.resolve()
    cwd, home = Path.cwd().resolve(), Path.home().resolve()
    if real == Path(real.anchor) or _contains(real, home):
        return "is the root or your home directory (or holds it)"
    if _contains(real, cwd):
        return "is the current directory (or holds it)"
    for item in _inputs(protect):
        if _contains(real, item.resolve()):
            return f"holds {item}, an input of this run"
    if path.is_symlink():
        return "is a symbolic link; give the directory it points to"
    if not path.is_dir():
        return "is a file, not a directory bertkit wrote"
    if not any(path.iterdir()):
        return None
    owned, extra = _owned(path)
    if not owned:
        return f"was not written by bertkit (it has no {MANIFEST} or {INFO_FILE})"
    found = _manifest(path)["kind"]
    if kind and found != kind:
        return f"holds a bertkit {found}, which this command would replace with a {kind}"
    if extra:
        shown = ", ".join(extra[:5]) + (f" and {len(extra) - 5} more" if len(extra) > 5 else "")
        return f"holds files bertkit did not write ({shown}); move them out first"
    return None


def check_output_dir(path: Path, overwrite: bool, protect: Iterable[str | Path] = (), kind: str | None = None) -> None:
    """Fail before any work when `path` exists and may not be replaced."""
    path = Path(path)
    for parent in path.parents:
        if parent.exists() and not parent.is_dir():
            raise BertkitError(f"cannot write {path}: {parent} is a file, not a folder. Choose another path.")
    if not path.exists() and not path.is_symlink():
        return
    if path.is_file():
        raise BertkitError(f"output directory {path} is a file; choose a directory name with --output-dir")
    if not overwrite:
        raise BertkitError(
            f"output directory {path} already exists; pass --overwrite to replace it, "
            "or choose another with --output-dir"
        )
    why = _refusal(path, protect, kind)
    if why:
        raise BertkitError(f"--overwrite: {path} {why}. bertkit replaces only what it wrote; choose another output.")


def staging_dir(final: Path) -> Path:
    """A new directory beside `final` to assemble it in (removed by `sweep_stale` if abandoned)."""
    try:
        ensure_folder(final.parent, final)
        sweep_stale(final.parent, final.name)
        staged = Path(tempfile.mkdtemp(prefix=_tmp_prefix(final.name), dir=final.parent))
    except OSError as err:
        raise cannot_write(err, final) from None
    follow_umask(staged, directory=True)
    return staged


def write_manifest(folder: Path, kind: str) -> None:
    from bertkit import __version__

    files = sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file() and p.name != MANIFEST)
    record = {"written_by": "bertkit", "version": __version__, "kind": kind, "files": files}
    record["created"] = time.strftime("%Y-%m-%dT%H:%M:%S%z")
    write_json(folder / MANIFEST, record)


def publish_dir(staged: Path, final: Path, overwrite: bool, kind: str = "bundle", protect=()) -> None:
    """Move a fully written `staged` directory to `final`, replacing an old one only if allowed."""
    check_output_dir(final, overwrite, protect, kind)
    follow_umask_tree(staged)
    write_manifest(staged, kind)
    final.parent.mkdir(parents=True, exist_ok=True)
    old = None
    if final.exists():
        old = final.with_name(f".{final.name}.old-{os.getpid()}")
        final.rename(old)
    staged.rename(final)
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)


@contextlib.contextmanager
def staged_dir(final: Path, overwrite: bool, kind: str, protect=()) -> Iterator[Path]:
    """A directory to fill that becomes `final` when the block ends without error; on any error
    (or interruption) it is removed and `final` is left as it was. An error names `final`, not
    the temporary directory, which the user never sees."""
    check_output_dir(final, overwrite, protect, kind)
    staged = staging_dir(final)
    try:
        yield staged
        publish_dir(staged, final, overwrite, kind, protect)
    except BaseException as err:
        shutil.rmtree(staged, ignore_errors=True)
        failed = writing_failed(err, final)
        if failed:
            raise failed from None
        if isinstance(err, BertkitError) and str(staged) in str(err):  # a file inside it could not be written
            raise BertkitError(str(err).replace(str(staged), str(final))) from None
        raise


# ---------------------------------------------------------------- a lock per output


class OutputLock:
    """`.NAME.lock` beside an output: one run at a time writes it. The lock records the owner's
    process id and host; a lock whose process is gone (same host) is stale and is taken over."""

    def __init__(self, target: Path):
        self.target = Path(os.path.abspath(target))
        self.path = self.target.with_name(f".{self.target.name}.lock")
        self.held = False

    def acquire(self) -> OutputLock:
        from bertkit.progress import console

        ensure_folder(self.path.parent, self.target)
        mine = {"pid": os.getpid(), "host": _host(), "started": time.strftime("%Y-%m-%dT%H:%M:%S%z")}
        for _ in range(3):
            if self._create(mine):
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
        fd, name = tempfile.mkstemp(prefix=_tmp_prefix(self.path.name), dir=self.path.parent)
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
                with os.fdopen(lock, "w", encoding="utf-8") as handle:
                    json.dump(owner, handle)
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
        return owner.get("host") == _host() and isinstance(pid, int) and not pid_alive(pid)

    def release(self) -> None:
        if self.held:
            with contextlib.suppress(FileNotFoundError):
                self.path.unlink()
            self.held = False

    def __enter__(self) -> OutputLock:
        return self.acquire()

    def __exit__(self, *exc) -> None:
        self.release()


# ---------------------------------------------------------------- prediction records


class RecordWriter:
    """Writes prediction records as JSON lines, flattened into CSV / TSV columns, as CoNLL token
    rows, or (squad) as the one JSON object `{id: answer}` that the official SQuAD scripts read.
    Use it as a context manager (or call `finish`): CSV, TSV and squad are written at the end.

    CSV and TSV columns are those of all the records, not of the first one: records differ (an
    empty input's result has `empty`, a record without an id has no `id`), so rows are kept in a
    temporary file until the end, when the header is known. Columns keep the records' own order
    (a column first seen in a later record goes after the column before it there), so the header
    does not depend on which record comes first; `empty` is always there, last (`true` or `false`).
    A missing or null value is an empty cell; booleans are written `true` / `false`, as in JSON.

    TSV is written as bertkit reads it: values as they are, no quoting, except that a value
    holding a tab or a line break is quoted CSV-style (TSV has no other way to carry one)."""

    EMPTY = "empty"  # the marker of an empty input's result: a column of every table

    def __init__(self, handle, fmt: str):
        if fmt not in OUTPUT_FORMATS:
            raise BertkitError(f"unknown output format '{fmt}'; use one of {', '.join(OUTPUT_FORMATS)}")
        self.handle, self.fmt = handle, fmt
        self._columns: list[str] = []
        self._rows = tempfile.TemporaryFile("w+", encoding="utf-8") if fmt in ("csv", "tsv") else None
        self._answers: dict[str, str] = {}

    def __enter__(self) -> RecordWriter:
        return self

    def __exit__(self, kind, error, trace) -> None:
        try:
            if kind is None:
                self.finish()
        finally:
            if self._rows is not None:
                self._rows.close()

    def finish(self) -> None:
        if self.fmt == "squad":
            json.dump(self._answers, self.handle, indent=1, ensure_ascii=False)
            self.handle.write("\n")
        elif self._rows is not None:
            self._write_table()

    def write(self, record: dict) -> None:
        if self.fmt == "squad":
            if "id" not in record or "answer" not in record:
                raise BertkitError("the squad output format needs question answers with ids; use jsonl")
            self._answers[str(record["id"])] = record["answer"] or ""
            return
        if self.fmt == "conll":  # token rows with the predicted tag as a last column
            if "tags" not in record:
                raise BertkitError(
                    "the conll output format needs token input (a CoNLL file, or JSON lines with 'tokens'); "
                    "use jsonl for text input"
                )
            rows = record.get("rows") or [[token] for token in record["tokens"]]
            for row, tag in zip(rows, record["tags"], strict=True):
                self.handle.write(" ".join([*row, tag]) + "\n")
            self.handle.write("\n")
            return
        if self.fmt == "jsonl":
            self.handle.write(json.dumps(record, ensure_ascii=False) + "\n")
            return
        flat = flatten(record)
        _merge_columns(self._columns, flat)
        self._rows.write(json.dumps(flat, ensure_ascii=False) + "\n")

    def _write_table(self) -> None:
        columns = [c for c in self._columns if c != self.EMPTY] + [self.EMPTY]
        write_row = csv.writer(self.handle).writerow if self.fmt == "csv" else self._tsv_row
        write_row(columns)
        for line in self._lines():
            flat = json.loads(line)
            flat.setdefault(self.EMPTY, False)
            write_row([_cell(flat.get(c)) for c in columns])

    def _lines(self) -> Iterator[str]:
        self._rows.flush()
        self._rows.seek(0)
        yield from self._rows

    def _tsv_row(self, values: list) -> None:
        cells = []
        for value in values:
            text = str(value)
            if any(c in text for c in "\t\r\n"):
                text = '"' + text.replace('"', '""') + '"'
            cells.append(text)
        self.handle.write("\t".join(cells) + "\n")


def _merge_columns(columns: list[str], record: dict) -> None:
    """Add the keys of `record` that `columns` lacks, each right after the key before it in the
    record (first when it is the record's first key): the records' own order, whichever record
    shows a key first."""
    previous = None
    for key in record:
        if key not in columns:
            columns.insert(columns.index(previous) + 1 if previous is not None else 0, key)
        previous = key


def _cell(value) -> str | int | float:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    return value


def flatten(record: dict, prefix: str = "") -> dict:
    """{'scores': {'pos': 0.9}} -> {'scores.pos': 0.9}; lists of plain values joined with '|'."""
    flat = {}
    for key, value in record.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict):
            flat.update(flatten(value, f"{name}."))
        elif isinstance(value, list) and all(not isinstance(v, dict | list) for v in value):
            flat[name] = "|".join(str(v) for v in value)
        elif isinstance(value, list):
            flat[name] = json.dumps(value, ensure_ascii=False)
        else:
            flat[name] = value
    return flat

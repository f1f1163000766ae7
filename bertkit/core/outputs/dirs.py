"""Output directories: the manifest of what bertkit wrote, the checks behind `--overwrite`, and
staging a directory beside its target before publishing it."""

from __future__ import annotations

import contextlib
import errno
import glob as globmod
import json
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Iterable, Iterator
from pathlib import Path

from bertkit import __version__
from bertkit.core.errors import BertkitError
from bertkit.core.outputs.files import (
    cannot_write,
    contains,
    discard,
    ensure_folder,
    follow_umask,
    follow_umask_tree,
    is_temporary,
    no_link_loop,
    recover_dir,
    sweep_stale,
    tmp_prefix,
    write_json,
    writing_failed,
)

MANIFEST = ".bertkit-output.json"  # what bertkit wrote into a directory it published
INFO_FILE = "bertkit.json"  # a bundle's description (bundles from before the manifest have only this)


# ---------------------------------------------------------------- directories


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
        if item.name == MANIFEST or relative in listed or is_temporary(item.name):
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


def _refusal(path: Path, protect: Iterable[str | Path], kind: str | None = None, allowed=()) -> str | None:
    """Why `path` must not be replaced by --overwrite, or None when it may be (files `allowed`
    inside it, which the caller keeps, do not count against it)."""
    real = path.resolve()
    cwd, home = Path.cwd().resolve(), Path.home().resolve()
    if real == Path(real.anchor) or contains(real, home):
        return "is the root or your home directory (or holds it)"
    if contains(real, cwd):
        return "is the current directory (or holds it)"
    for item in _inputs(protect):
        if contains(real, item.resolve()):
            return f"holds {item}, an input of this command"
    if path.is_symlink():
        return "is a symbolic link; give the directory it points to"
    if not path.is_dir():
        return "is a file, not a directory bertkit wrote"
    if not any(path.iterdir()):
        return None
    owned, extra = _owned(path)
    extra = [e for e in extra if (path / e).resolve() not in {Path(a).resolve() for a in allowed}]
    if not owned:
        return f"was not written by bertkit (it has no {MANIFEST} or {INFO_FILE})"
    found = _manifest(path)["kind"]
    if kind and found != kind:
        return f"holds a bertkit {found}, which this command would replace with a {kind}"
    if extra:
        shown = ", ".join(extra[:5]) + (f" and {len(extra) - 5} more" if len(extra) > 5 else "")
        return f"holds files bertkit did not write ({shown}); move them out first"
    return None


def check_output_dir(
    path: Path,
    overwrite: bool,
    protect: Iterable[str | Path] = (),
    kind: str | None = None,
    allowed=(),
    home: str | Path | None = None,
) -> None:
    """Fail before any work when `path` may not be written: inside one of the command's inputs
    (`protect`: writing there would change it; `home`, an input the command publishes its results
    in by design, is the exception: `evaluate`'s MODEL/eval-NAME), or existing and not replaceable
    (`allowed`: files inside it that are not bertkit's but that the caller keeps, such as the study
    storage `bertkit tune` was given)."""
    path = Path(path)
    no_link_loop(path)
    if not Path(os.path.abspath(path)).name:
        raise BertkitError(f"output directory {path} is the root of the file system; choose a folder for it")
    check_outside_inputs(path, [p for p in protect if p is not None and str(p) != str(home)], "output directory")
    recover_dir(path)
    for parent in path.parents:
        if parent.exists() and not parent.is_dir():
            raise BertkitError(f"cannot write {path}: {parent} is a file, not a folder. Choose another path.")
    if not path.exists() and not path.is_symlink():
        return
    if path.is_file():
        raise BertkitError(f"output directory {path} is a file; choose a directory name with -o")
    if not overwrite:
        raise BertkitError(
            f"output directory {path} already exists; pass --overwrite to replace it, or choose another with -o"
        )
    why = _refusal(path, protect, kind, allowed)
    if why:
        raise BertkitError(f"--overwrite: {path} {why}. bertkit replaces only what it wrote; choose another output.")


def check_outside_inputs(path: Path, inputs: Iterable[str | Path], what: str) -> None:
    """`path` is not inside one of `inputs` that is a folder (a model, an index, a data folder):
    writing there would change the input (a later `bertkit tune` finds another model by its
    content), and make a bundle hold files that `--overwrite` then refuses."""
    here = Path(os.path.abspath(path)).resolve()
    for source in inputs:
        if source is None or str(source) in ("", "-"):
            continue
        folder = Path(source).expanduser()
        if folder.is_dir() and contains(folder.resolve(), here):
            raise BertkitError(
                f"{what} {path} is inside {source}, an input of this command; writing there would change it. "
                "Choose a place outside it."
            )


def check_cache_dir(path: str | Path | None, *inputs: str | Path | None, flag: str = "--cache-dir") -> None:
    """A folder for bertkit's caches: never inside one of the command's inputs (`check_outside_inputs`)
    nor inside a folder bertkit published (a bundle, an evaluation), where the cache's files would
    be files that folder's manifest does not list, and `--overwrite` of it would refuse them."""
    if path is None:
        return
    check_outside_inputs(Path(path), [p for p in inputs if p is not None and str(p) != "-"], flag)
    here = Path(os.path.abspath(path)).resolve()
    for folder in (here, *here.parents):
        if (folder / MANIFEST).is_file():
            raise BertkitError(
                f"{flag} {path} is inside {folder}, a folder bertkit wrote (it has {MANIFEST}); keep caches out of "
                "bertkit's outputs. Choose another folder, or leave the option out (the cache then lives in "
                "$BERTKIT_CACHE)."
            )


def staging_dir(final: Path) -> Path:
    """A new directory beside `final` to assemble it in (removed by `sweep_stale` if abandoned)."""
    try:
        ensure_folder(final.parent, final)
        sweep_stale(final.parent, final.name)
        staged = Path(tempfile.mkdtemp(prefix=tmp_prefix(final.name), dir=final.parent))
    except OSError as err:
        raise cannot_write(err, final) from None
    follow_umask(staged, directory=True)
    return staged


def write_manifest(folder: Path, kind: str, files: Iterable[str] | None = None, **notes) -> None:
    """The manifest of `folder`: every file in it, or only `files` where others' may be there too
    (`notes`: more fields, such as the files a command keeps there for the user)."""

    if files is None:
        files = (p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file() and p.name != MANIFEST)
    record = {"written_by": "bertkit", "version": __version__, "kind": kind, "files": sorted(files)}
    record["created"] = time.strftime("%Y-%m-%dT%H:%M:%S%z")
    write_json(folder / MANIFEST, {**record, **notes})


def publish_dir(staged: Path, final: Path, overwrite: bool, kind: str = "bundle", protect=(), home=None) -> None:
    """Move a fully written `staged` directory to `final`, replacing an old one only if allowed.

    An old `final` is replaced in one step: the two directories are exchanged (`exchange_dirs`), so
    `final` always names a whole directory, the old one or the new, and a process killed at any
    point leaves one of them there (the old one, after the exchange, is a leftover that the next
    write sweeps). Where the file system cannot exchange, the old directory is first renamed to
    `.NAME.old-PID`: a kill before the new one is renamed in leaves it there, and the next bertkit
    run that looks at `final` puts it back (`files.recover_dir`); once the new one is in, the old
    one is deleted as trash (`files.discard`), which is never put back."""
    check_output_dir(final, overwrite, protect, kind, home=home)
    follow_umask_tree(staged)
    write_manifest(staged, kind)
    final.parent.mkdir(parents=True, exist_ok=True)
    if not final.exists():
        staged.rename(final)
        return
    if exchange_dirs(staged, final):  # `staged` now holds the old directory
        shutil.rmtree(staged, ignore_errors=True)
        return
    old = final.with_name(f".{final.name}.old-{os.getpid()}")
    final.rename(old)
    try:
        staged.rename(final)
    except BaseException:
        old.rename(final)
        raise
    with contextlib.suppress(OSError):  # the new one is in: a leftover the next write sweeps
        discard(old)  # as trash: a kill while deleting it leaves nothing that could be put back


_RENAME_EXCHANGE, _AT_FDCWD = 2, -100


def exchange_dirs(first: Path, second: Path) -> bool:
    """Swap the names of two directories in one atomic step (Linux renameat2 RENAME_EXCHANGE);
    False where the system or the file system cannot (then nothing changed)."""
    import ctypes

    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        renameat2 = libc.renameat2  # glibc 2.28 and later
    except (OSError, AttributeError):
        return False
    renameat2.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
    renameat2.restype = ctypes.c_int
    done = renameat2(_AT_FDCWD, os.fsencode(first), _AT_FDCWD, os.fsencode(second), _RENAME_EXCHANGE)
    if done == 0:
        return True
    code = ctypes.get_errno()
    if code in (errno.ENOSYS, errno.EINVAL, errno.EOPNOTSUPP, errno.ENOTSUP, errno.EPERM):
        return False  # no renameat2, or a file system without exchange (NFS, some FUSE)
    raise OSError(code, os.strerror(code), str(second))


@contextlib.contextmanager
def staged_dir(final: Path, overwrite: bool, kind: str, protect=(), home=None) -> Iterator[Path]:
    """A directory to fill that becomes `final` when the block ends without error; on any error
    (or interruption) it is removed and `final` is left as it was. An error names `final`, not
    the temporary directory, which the user never sees. (`home`: as `check_output_dir` says.)"""
    check_output_dir(final, overwrite, protect, kind, home=home)
    staged = staging_dir(final)
    try:
        yield staged
        publish_dir(staged, final, overwrite, kind, protect, home=home)
    except BaseException as err:
        shutil.rmtree(staged, ignore_errors=True)
        failed = writing_failed(err, final)
        if failed:
            raise failed from None
        if isinstance(err, BertkitError) and str(staged) in str(err):  # a file inside it could not be written
            raise BertkitError(str(err).replace(str(staged), str(final))) from None
        raise

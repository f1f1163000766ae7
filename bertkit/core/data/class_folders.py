"""Data sets as folders and files of classes: one file per class, an example a line
(`data.train: {files: {positive: rt-polarity.pos, ...}}`), and folders read whole (one sub-folder
per class with a text file per example, as IMDb comes, or one LABEL.txt file per class). Every
entry of a folder that is not hidden is read, or is an error naming it."""

from __future__ import annotations

import zlib
from collections.abc import Iterator
from pathlib import Path

from bertkit.core.data.files import open_binary
from bertkit.core.data.format_readers import read_lines
from bertkit.core.errors import BertkitError


def class_files_records(
    files: dict[str, str], text_column: str, label_column: str, encoding: str = "utf-8"
) -> Iterator[tuple[str, dict]]:
    """One file per class, one example per line (`files: {positive: rt-polarity.pos, ...}`)."""
    for label, path in files.items():  # all checked before any is read
        if Path(path).is_dir():
            raise BertkitError(f"{path} is a folder; the file of class '{label}' must be a file, one example a line")
        if not Path(path).is_file():
            raise BertkitError(f"data file not found: {path} (the file of class '{label}')")
    for label, path in files.items():
        found = 0
        for located in read_lines(path, text_column, False, encoding, {label_column: label}):
            found += 1
            yield located
        if not found:  # a class would silently vanish from the data
            raise BertkitError(f"{path}: no examples in this file (the file of class '{label}'); it is empty or blank")


CLASS_FILE_SUFFIXES = (".txt", ".text")  # a class's file in a folder of class files, each also gzipped (.txt.gz)
FOLDER_LAYOUTS = (
    "one sub-folder per class (a text file per example) or one LABEL.txt file per class (an example per "
    "line; .text and .txt.gz too)"
)


def class_file_label(path: Path) -> str | None:
    """The class a file of a folder of class files holds (`neutral.txt`, `neutral.text`,
    `neutral.txt.gz`: neutral), or None for a file of another kind."""
    name = path.name[:-3] if path.name[-3:].lower() == ".gz" else path.name
    for suffix in CLASS_FILE_SUFFIXES:
        if name[-len(suffix) :].lower() == suffix and len(name) > len(suffix):
            return name[: -len(suffix)]
    return None


def _visible(folder: Path) -> list[Path]:
    """A folder's entries in name order, hidden ones (`.DS_Store`, `.git`) left out."""
    return [p for p in sorted(folder.iterdir()) if not p.name.startswith(".")]


def read_folder(root: Path, text_column: str, label_column: str, encoding: str = "utf-8") -> Iterator[tuple[str, dict]]:
    """One sub-folder per class with one text file per example (the original IMDb layout), or one
    `LABEL.txt` file per class with one example per line. Every entry that is not hidden is read,
    or is an error naming it: nothing in the folder is silently left out."""
    if (root / "config.json").is_file() or (root / "bertkit.json").is_file():
        raise BertkitError(
            f"{root}: this folder holds a model (config.json), not data; give a data file (CSV, TSV, JSON lines, "
            f"...) or a folder with {FOLDER_LAYOUTS}"
        )
    visible = _visible(root)
    classes = [p for p in visible if p.is_dir()]
    if not visible:
        raise BertkitError(f"{root}: the folder is empty; a folder data set holds {FOLDER_LAYOUTS}")
    if not classes:
        yield from class_files_records(_class_files(root, visible), text_column, label_column, encoding)
        return
    loose = next((p for p in visible if not p.is_dir()), None)
    if loose is not None:
        raise BertkitError(
            f"{loose}: a file beside the class sub-folders of {root}, which would not be read (each sub-folder is "
            "a class, each file in it an example). Move it out of the folder, or into the sub-folder of its class"
        )
    for folder in classes:
        examples = _visible(folder)
        if not examples:
            raise BertkitError(f"{folder}: the folder of class '{folder.name}' holds no example files")
        for file in examples:
            if file.is_dir():
                raise BertkitError(
                    f"{file}: a folder inside the folder of class '{folder.name}', which would not be read; each "
                    "example is a text file directly in its class's folder"
                )
            text = _example_text(file, encoding)
            if not text.strip():
                raise BertkitError(
                    f"{file}: an empty example of class '{folder.name}' (the file holds no text); remove it or fill it"
                )
            yield str(file), {text_column: text.strip(), label_column: folder.name, "file": file.name}


def _example_text(file: Path, encoding: str) -> str:
    """The whole text of one example's file (gzip looked through, as for every data file)."""
    handle = open_binary(str(file))
    try:
        data = handle.read()
    except (OSError, EOFError, zlib.error) as err:
        raise BertkitError(f"{file}: cannot read: {err}") from None
    finally:
        handle.close()
    try:
        return data.decode(encoding).removeprefix("\ufeff")
    except UnicodeDecodeError as err:
        raise BertkitError(
            f"{file}: not {encoding} text ({err.reason} at byte {err.start}); name the encoding "
            "(data.encoding, e.g. latin-1)"
        ) from None


def _class_files(root: Path, files: list[Path]) -> dict[str, str]:
    """{label: path} of a folder of class files; a file that is not one (`neutral.tsv`, `neutral`,
    a README), or a second file of one class, is an error naming it."""
    found: dict[str, Path] = {}
    for file in files:
        label = class_file_label(file)
        if label is None or label.lower() == "readme":
            what = "a README" if (label or file.name.split(".")[0]).lower() == "readme" else "not a class file"
            raise BertkitError(
                f"{file}: {what} in the folder of class files {root}, which would not be read. Each file of the "
                f"folder is one class, named LABEL{', LABEL'.join(CLASS_FILE_SUFFIXES)} or LABEL.txt.gz, an "
                "example a line: rename it, or move it out of the folder"
            )
        if label in found:
            raise BertkitError(
                f"{file}: a second file of class '{label}' (with {found[label].name}) in {root}; keep one file per "
                "class, or give them as data.train: {files: {...}} under labels of their own"
            )
        found[label] = file
    return {label: str(path) for label, path in found.items()}

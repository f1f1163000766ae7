"""The checkpoints of an unfinished run (`OUTPUT_DIR.partial/checkpoint-STEP/`): which are
complete, so that `--resume` continues from the last one that can really be loaded.

A checkpoint is written file by file (weights, optimizer, scheduler, random states, and
`trainer_state.json` last). A full disk or a kill can stop that half-way; such a checkpoint
is skipped (and removed) rather than making the resume fail.
"""

from __future__ import annotations

import json
import struct
import zipfile
from pathlib import Path

PREFIX = "checkpoint-"
RUN_MARKER = ".bertkit-run"  # written into the work directory when a run starts


def step_of(folder: Path) -> int:
    try:
        return int(folder.name[len(PREFIX) :])
    except ValueError:
        return -1


def checkpoints(work: Path) -> list[Path]:
    """Checkpoint folders of `work`, oldest step first."""
    if not work.is_dir():
        return []
    found = [p for p in work.iterdir() if p.is_dir() and p.name.startswith(PREFIX) and step_of(p) >= 0]
    return sorted(found, key=step_of)


def is_complete(folder: Path) -> bool:
    state = folder / "trainer_state.json"
    try:
        content = json.loads(state.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    # transformers reads the step and the log history from it; a file without them cannot resume
    if not isinstance(content, dict) or type(content.get("global_step")) is not int:
        return False
    weights = sorted(folder.glob("*.safetensors"))
    if not weights and not list(folder.glob("*.bin")):
        return False
    if not all(safetensors_whole(w) for w in weights):
        return False
    # torch.save writes zip archives: a truncated one has no central directory
    return all(zipfile.is_zipfile(f) for f in folder.glob("*.pt*"))


def safetensors_whole(path: Path) -> bool:
    """Whether a .safetensors file holds its whole header and every tensor its header lists."""
    try:
        with open(path, "rb") as handle:
            size = struct.unpack("<Q", handle.read(8))[0]
            if size > 100_000_000:
                return False
            header = json.loads(handle.read(size))
        end = max((t["data_offsets"][1] for k, t in header.items() if k != "__metadata__"), default=0)
        return path.stat().st_size >= 8 + size + end
    except (OSError, ValueError, KeyError, TypeError, struct.error):
        return False


def last_complete(work: Path) -> tuple[Path | None, list[Path]]:
    """The newest complete checkpoint, and the newer ones that are incomplete."""
    broken = []
    for folder in reversed(checkpoints(work)):
        if is_complete(folder):
            return folder, broken
        broken.append(folder)
    return None, broken


def foreign_files(work: Path) -> list[str]:
    """What in `work` a bertkit run did not put there: anything but its marker, `checkpoint-STEP`
    folders (and transformers' `tmp-checkpoint-STEP`) and TensorBoard's `runs/`. A folder that
    is not empty and lacks the marker was not made by a bertkit run at all: all of it is foreign
    (someone's own `checkpoint-500/` or `runs/` must not be taken for a run's debris)."""
    foreign = []
    if any(work.iterdir()) and not (work / RUN_MARKER).is_file():
        return sorted(item.name for item in work.iterdir())
    for item in sorted(work.iterdir()):
        if item.is_symlink():
            foreign.append(item.name)
        elif item.is_file() and item.name == RUN_MARKER:
            continue
        elif item.is_dir() and (step_of(item) >= 0 and item.name.startswith(PREFIX) or item.name == "runs"):
            continue
        elif item.is_dir() and item.name.startswith("tmp-" + PREFIX) and item.name[4 + len(PREFIX) :].isdigit():
            continue
        else:
            foreign.append(item.name)
    return foreign

"""`predict`, `embed` and `evaluate` as several processes, started by torchrun or accelerate launch.

A launcher starts N copies of the command and tells each its place through the environment
(`RANK`, `WORLD_SIZE`, `LOCAL_RANK`, `MASTER_ADDR`, `MASTER_PORT`); bertkit reads it and needs no
option of its own. The processes join one gloo process group (it carries statuses and results
between them, never tensors for the model, so it serves GPUs and CPUs alike) and split the input
into units: the task's chunks of records, which each process would have read anyway, so every
batch is the batch one process alone would have run and the numbers are the same to the bit.

- predict, embed: unit u belongs to process u mod N. Each process writes the results of its units
  into its part (a file in a folder beside the output, `.NAME.tmp-PID-shards-*`); when every
  process has finished its part, process 0 reads the parts back in unit order and writes the one
  output, atomically, through the same writer as a single process. The folder is then removed.
- evaluate: every process reads and tokenizes the labelled file, runs its share of the batches
  (`inference.forward`) and the rows are gathered, so each computes the same scores on the full
  set; process 0 writes them.

When a process fails it prints its own error and exits; a launcher then stops the others (they
clean up as on Ctrl-C). Without a launcher to do so, the others learn it at the next exchange
(gloo sees the closed connection) or, if a process hangs, after `BERTKIT_DIST_TIMEOUT` seconds;
they end with an error naming what happened, and the output is never written in part.
"""

from __future__ import annotations

import contextlib
import os
import pickle
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from bertkit.core.errors import BertkitError
from bertkit.core.outputs import cannot_write, ensure_folder
from bertkit.core.outputs.files import tmp_prefix
from bertkit.core.progress import console

TIMEOUT_VARIABLE = "BERTKIT_DIST_TIMEOUT"
# torch's own default for a gloo group (30 minutes): an exchange waits for the slowest process to
# finish its share, and units are dealt out in turn, so shares differ by about one unit of work.
DEFAULT_TIMEOUT = 1800


@dataclass(frozen=True)
class Place:
    """Where this process stands among those a launcher started."""

    rank: int
    size: int
    local_rank: int

    @property
    def main(self) -> bool:
        return self.rank == 0

    def owns(self, unit: int) -> bool:
        return unit % self.size == self.rank

    def name(self) -> str:
        return f"rank {self.rank} of {self.size}"


def place() -> Place | None:
    """This process's place, or None when it runs alone (no launcher, or a launcher of one)."""
    size = _number("WORLD_SIZE", 1)
    if size <= 1:
        return None
    rank = _number("RANK", 0)
    if not 0 <= rank < size:
        raise BertkitError(f"RANK={rank} with WORLD_SIZE={size}: the launcher's settings disagree")
    return Place(rank, size, _number("LOCAL_RANK", rank))


def is_main() -> bool:
    """Whether this process reports results: the only one, or process 0 of several."""
    here = place()
    return here is None or here.main


def local_rank() -> int | None:
    """The launcher's LOCAL_RANK (this process's GPU on its machine), None when it runs alone."""
    here = place()
    return None if here is None else here.local_rank


def timeout() -> int:
    return _number(TIMEOUT_VARIABLE, DEFAULT_TIMEOUT)


def _number(variable: str, default: int) -> int:
    value = os.environ.get(variable, "").strip()
    if not value:
        return default
    try:
        return int(value)
    except ValueError:
        raise BertkitError(f"{variable}={value!r}: expected a whole number") from None


def refuse_streams(source: str | None, output: str | None, command: str) -> None:
    """Several processes cannot share stdin, and only a file can be written by merging parts."""
    if source == "-":
        raise BertkitError(f"{command} under a launcher reads a file: give --input FILE, not - (stdin)")
    if output in (None, "-"):
        raise BertkitError(f"{command} under a launcher writes a file: give --output FILE (not stdout)")


@contextlib.contextmanager
def group(here: Place) -> Iterator[Place]:
    """The gloo process group for the run (made here unless the launcher's code made one); the
    other processes' progress and messages are silenced, process 0 speaks for all."""
    from datetime import timedelta

    import torch.distributed as dist


    made = False
    if not dist.is_initialized():
        missing = [v for v in ("MASTER_ADDR", "MASTER_PORT") if not os.environ.get(v)]
        if missing:
            raise BertkitError(
                f"WORLD_SIZE={here.size} but {' and '.join(missing)} unset: start the processes with torchrun "
                "or accelerate launch, which set them"
            )
        try:
            dist.init_process_group("gloo", timeout=timedelta(seconds=timeout()), rank=here.rank, world_size=here.size)
        except (RuntimeError, ValueError) as err:  # DistStoreError (a RuntimeError) when a process never came
            raise BertkitError(
                f"the {here.size} processes did not all join within {timeout()} s "
                f"({_first_line(err)}); check that each one started ({TIMEOUT_VARIABLE} sets the wait)"
            ) from None
        made = True
    quiet = console.quiet
    console.quiet = not here.main
    try:
        yield here
    except BaseException:
        made = False  # a peer may be gone: leaving the group could wait on it; the process ends anyway
        raise
    finally:
        console.quiet = quiet
        if made:
            # every process reaches the end before any leaves the group: one that tore its gloo
            # threads down while a peer still used the connection was aborted (SIGABRT) at exit
            with contextlib.suppress(RuntimeError):
                dist.barrier()
            dist.destroy_process_group()


def leave_if_launched(code: int | str | None) -> None:
    """Under a launcher, end the process now with `code`, past the interpreter's teardown. A
    sharded run's gloo threads, torn down at exit while a peer is gone, frozen or still leaving,
    can abort the process (SIGABRT, "terminate called without an active exception") and lose the
    exit code after all the work was done and said. The CLI calls this last: everything of
    bertkit's is written, renamed and cleaned up by then."""
    import sys

    if "torch.distributed" not in sys.modules or os.environ.get("WORLD_SIZE", "1").strip() in ("", "0", "1"):
        return
    if code is not None and not isinstance(code, int):  # sys.exit("message"): Python prints it
        return
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code or 0)


def gather(here: Place, value, waiting_for: str) -> list:
    """Every process's `value`, in rank order. A process that stopped (or did not answer within
    the timeout) ends the run here with an error instead of a wait without end."""
    import torch.distributed as dist

    values: list = [None] * here.size
    try:
        dist.all_gather_object(values, value)
    except RuntimeError as err:
        raise BertkitError(
            f"another process stopped (or went silent for {timeout()} s) {waiting_for} "
            f"({_first_line(err)}); its own message says why. Nothing was written."
        ) from None
    return values


def _first_line(err: BaseException) -> str:
    """What gloo or the store said, without its source location: "Connection closed by peer ..."."""
    import re

    line = (str(err).strip().splitlines() or [type(err).__name__])[0]
    return re.sub(r"^\[[^\]]*\] ", "", line).split(". ")[0][:160]


# ------------------------------------------------------------------------------ predict and embed


class Shards:
    """The folder of the parts, beside the output, and this process's part in it."""

    def __init__(self, here: Place, folder: Path):
        self.here, self.folder = here, folder
        self.path = folder / f"part-{here.rank}"
        self._handle = open(self.path, "wb")  # noqa: SIM115 - closed by `close`
        self._unit: int | None = None
        self._items: list = []

    def add(self, unit: int, item) -> None:
        """Append `item` (a result, a chunk of vectors) to `unit` of this process's part."""
        if unit != self._unit:
            self._flush()
            self._unit = unit
        self._items.append(item)

    def _flush(self) -> None:
        if self._items:
            pickle.dump((self._unit, self._items), self._handle, protocol=pickle.HIGHEST_PROTOCOL)
        self._items = []

    def close(self) -> None:
        self._flush()
        self._handle.close()

    def finish(self, value=None) -> list:
        """Close this part, wait for every process to finish its own, and return their `value`s."""
        self.close()
        return gather(self.here, value, "before finishing its share")

    def merged(self) -> Iterator:
        """Every process's items, in input order (process 0, after `finish`)."""
        parts = [_units(self.folder / f"part-{rank}") for rank in range(self.here.size)]
        heads = [next(part, None) for part in parts]
        unit = 0  # units are numbered without gaps, and unit u is in part u mod N
        while True:
            owner = unit % self.here.size
            head = heads[owner]
            if head is None or head[0] != unit:
                if any(h is not None for h in heads):  # the parts are not what this run wrote
                    raise RuntimeError(f"{self.folder}: unit {unit} missing from part-{owner}")
                return
            yield from head[1]
            heads[owner] = next(parts[owner], None)
            unit += 1


def _units(path: Path) -> Iterator[tuple[int, list]]:
    with open(path, "rb") as handle:
        while True:
            try:
                yield pickle.load(handle)  # noqa: S301 - our own part, written by this run
            except EOFError:
                return


@contextlib.contextmanager
def shards(here: Place, output: str) -> Iterator[Shards]:
    """The parts' folder beside `output`: made by process 0 (named as the output's temporaries, so a
    later write sweeps it up if a killed run left it), seen by all (a multi-machine run needs the
    output's folder on a file system they share), and removed when the run ends, however it ends."""
    import shutil
    import tempfile


    target = Path(output)
    name = None
    if here.main:
        try:
            ensure_folder(target.parent, output)
            name = tempfile.mkdtemp(prefix=tmp_prefix(target.name) + "shards-", dir=target.parent)
        except OSError as err:
            raise cannot_write(err, output) from None
    folder = Path(gather(here, name, "before the run began")[0])
    part = None
    try:
        if not folder.is_dir():
            raise BertkitError(
                f"cannot see {folder}, made by process 0 beside {output}; on several machines, "
                "write the output to a folder all of them share"
            )
        part = Shards(here, folder)
        yield part
    except BaseException:
        if part is not None and not here.main:  # a finished part stays for process 0 to read
            with contextlib.suppress(OSError):
                part.close()
                part.path.unlink()
        raise
    finally:
        if part is not None:
            with contextlib.suppress(OSError):
                part.close()
        if here.main:
            shutil.rmtree(folder, ignore_errors=True)


# ------------------------------------------------------------------------------ evaluate

_forward_share: Place | None = None


@contextlib.contextmanager
def split_forward(here: Place) -> Iterator[None]:
    """Inside the block, `inference.forward` runs this process's share of every call's batches and
    gathers the other rows from the other processes."""
    global _forward_share
    _forward_share = here
    try:
        yield
    finally:
        _forward_share = None


def forward_share() -> Place | None:
    return _forward_share

"""Progress on stderr with rich: a status spinner, counted progress, and a Trainer callback."""

from __future__ import annotations

import contextlib
import math

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    SpinnerColumn,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

console = Console(stderr=True)


@contextlib.contextmanager
def status(message: str):
    with console.status(message + " ..."):
        yield


def bar(description: str, total: int | None = None) -> Progress:
    columns = [SpinnerColumn(), TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn()]
    columns += [TimeElapsedColumn(), TimeRemainingColumn()] if total else [TimeElapsedColumn()]
    progress = Progress(*columns, console=console, transient=False)
    progress.add_task(description, total=total)
    return progress


def callback_base():
    """transformers' TrainerCallback, imported only when a callback class is defined."""
    from transformers import TrainerCallback

    return TrainerCallback


def __getattr__(name: str):
    """`RichProgress` is made on first use: its base class imports transformers' Trainer (and so
    torch), which `predict` on an ONNX bundle must not load."""
    if name == "RichProgress":
        globals()[name] = cls = _rich_progress()
        return cls
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _rich_progress():
    body = {k: v for k, v in vars(_RichProgress).items() if k not in ("__dict__", "__weakref__")}
    return type("RichProgress", (callback_base(),), body)


class _RichProgress:
    """Shows training steps as a rich progress bar and each log entry as one readable line."""

    def __init__(self):
        self.progress = None

    def on_train_begin(self, args, state, control, **kwargs):
        if state.is_world_process_zero:
            self.progress = bar("training", state.max_steps)
            self.progress.start()
            self.progress.update(self.progress.task_ids[0], completed=state.global_step)

    def on_step_end(self, args, state, control, **kwargs):
        if self.progress:
            self.progress.update(self.progress.task_ids[0], completed=state.global_step)

    def on_log(self, args, state, control, logs=None, **kwargs):
        if not (self.progress and logs):
            return
        shown = {
            k: v
            for k, v in logs.items()
            if isinstance(v, int | float) and not k.endswith(("_runtime", "_per_second", "flos"))
        }
        text = "  ".join(f"{k}={_fmt(v)}" for k, v in shown.items())
        self.progress.console.print(f"[dim]epoch {state.epoch or 0:.2f}[/dim]  {text}")

    def on_train_end(self, args, state, control, **kwargs):
        if self.progress:
            self.progress.stop()
            self.progress = None


def _fmt(value: float) -> str:
    if isinstance(value, int):
        return str(value)
    if value == 0 or not math.isfinite(value):
        return str(value)
    return f"{value:.4g}" if abs(value) < 1e4 else f"{value:.3e}"

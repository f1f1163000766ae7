"""Termination signals (Ctrl-C, SIGTERM, SIGHUP) become an `Interrupted` exception raised where
the program is, so that cleanup code runs and nothing half-written is left behind.

One place is unsafe to raise in: the middle of an import. torch runs Python modules from inside its
C++ start-up, and an exception thrown through that code aborts the whole process (`terminate called
after throwing pybind11::error_already_set`, exit 134, no cleanup). A signal that arrives while any
module is being imported is therefore held and raised again as soon as the import is over."""

from __future__ import annotations

import contextlib
import signal
import threading

_IMPORT_MACHINERY = "<frozen importlib._bootstrap"  # _bootstrap and _bootstrap_external
_POLL_SECONDS = 0.02


class Interrupted(BaseException):
    """A termination signal, raised where the program is so that cleanup code runs."""

    def __init__(self, number: int):
        super().__init__(number)
        self.number = number


def install() -> dict[int, object]:
    """Raise `Interrupted` on SIGINT, SIGTERM and SIGHUP in the main thread; a signal ignored
    (`nohup`) stays ignored. Returns the handlers replaced, for `restore`."""
    replaced = {}
    for name in ("SIGINT", "SIGTERM", "SIGHUP"):
        number = getattr(signal, name, None)
        if number is not None and signal.getsignal(number) is not signal.SIG_IGN:
            with contextlib.suppress(ValueError):  # not the main thread
                replaced[number] = signal.signal(number, _stop)
    return replaced


def restore(replaced: dict[int, object]) -> None:
    """Put back the handlers `install` replaced. A handler set outside Python (None) cannot be put
    back, and its signal keeps bertkit's."""
    for number, handler in replaced.items():
        if handler is not None:
            with contextlib.suppress(ValueError):
                signal.signal(number, handler)


@contextlib.contextmanager
def installed():
    """`install` for the time of the block, then the handlers before it again: a program that runs
    `bertkit.cli.main` in its own process (a test session, a notebook) gets its own Ctrl-C back."""
    replaced = install()
    try:
        yield
    finally:
        restore(replaced)


def importing(frame) -> bool:
    """Whether `frame` (or any frame it was called from) is inside Python's import machinery."""
    while frame is not None:
        if frame.f_code.co_filename.startswith(_IMPORT_MACHINERY):
            return True
        frame = frame.f_back
    return False


_held: set[int] = set()


def _stop(number, frame):
    if not importing(frame):
        raise Interrupted(number)
    if number in _held:  # already waiting for this import to end
        return
    _held.add(number)
    main = threading.main_thread()
    threading.Thread(target=_deliver_after_import, args=(number, main.ident), daemon=True).start()


def _deliver_after_import(number: int, main_ident: int) -> None:
    import sys
    import time

    while True:
        time.sleep(_POLL_SECONDS)
        frame = sys._current_frames().get(main_ident)
        if frame is None or not importing(frame):
            break
    _held.discard(number)
    signal.pthread_kill(main_ident, number)  # the handler runs again, now outside the import

"""`bertkit ARGS` run in the test's own process: no fresh Python and no second import of torch
for each command, which is most of what a command costs on a tiny model."""

from __future__ import annotations

import signal

# how bertkit ends a run stopped by a termination signal: 128 + the signal (bertkit.cli.main)
_SIGNALLED = {128 + int(getattr(signal, name)) for name in ("SIGINT", "SIGTERM", "SIGHUP") if hasattr(signal, name)}


def exit_code(stop: SystemExit) -> int:
    return stop.code if isinstance(stop.code, int) else (0 if stop.code is None else 1)


def run_main(*args) -> int:
    """`bertkit.cli.main(args)`'s exit code. A command stopped by Ctrl-C, SIGTERM or SIGHUP (the
    signal reached the test session, which runs the command) raises KeyboardInterrupt: pytest then
    stops the session, where it would count one failed test and go on to the next."""
    from bertkit.cli import main

    try:
        main([str(a) for a in args])
        code = 0
    except SystemExit as stop:
        code = exit_code(stop)
    if code in _SIGNALLED:
        raise KeyboardInterrupt(f"`bertkit {' '.join(map(str, args))}` was interrupted (exit {code})")
    return code

"""`bertkit ARGS` run in the test's own process: no fresh Python and no second import of torch
for each command, which is most of what a command costs on a tiny model."""

from __future__ import annotations


def exit_code(stop: SystemExit) -> int:
    return stop.code if isinstance(stop.code, int) else (0 if stop.code is None else 1)


def run_main(*args) -> int:
    """`bertkit.cli.main(args)`'s exit code. A command stopped by a termination signal (Ctrl-C,
    SIGTERM, SIGHUP: it reached the test session, which runs the command) raises KeyboardInterrupt,
    so that pytest stops the session where it would count one failed test and go on. A test that
    raises KeyboardInterrupt itself inside a command (to stand for Ctrl-C) gets the exit code."""
    from bertkit.cli import Interrupted, main

    try:
        main([str(a) for a in args])
    except SystemExit as stop:
        # bertkit's signal handler raises Interrupted; main turns it into exit 128 + the signal
        if isinstance(stop.__context__, Interrupted):
            raise KeyboardInterrupt(f"`bertkit {' '.join(map(str, args))}` was interrupted") from stop
        return exit_code(stop)
    return 0

"""A `bertkit` that starts in milliseconds, for the docs test (tests/test_docs_commands.py).

The docs run about a hundred `bertkit` commands; each would spend seconds importing torch and
transformers before doing a second's work on a tiny model. So one server process imports them
once and forks a child per command: the `bertkit` on the docs test's PATH is a client script that
hands the server its arguments, working directory, environment and its stdin, stdout and stderr
(the file descriptors themselves, over a Unix socket), and exits with the child's exit code. A
child is a fresh copy of the server, so nothing one command does leaks into the next.

The child applies the docs test's run-time substitutions (tests/helpers/docs_substitutions.py): Hub ids
resolve to tiny local models, and training commands get the limits that keep them short.

    python tests/helpers/docs_server.py SOCKET SETTINGS.json     # serve until killed
"""

from __future__ import annotations

import json
import os
import signal
import socket
import struct
import sys
from pathlib import Path

CLIENT = '''#!{python} -S
import json, os, socket, struct, sys
link = socket.socket(socket.AF_UNIX)
link.connect({socket!r})
request = json.dumps({{"argv": sys.argv[1:], "cwd": os.getcwd(), "env": dict(os.environ)}}).encode()
socket.send_fds(link, [struct.pack("!I", len(request)) + request], [0, 1, 2])
code = link.recv(4)
if len(code) < 4:
    sys.stderr.write("docs test: the bertkit child died without an exit code\\n")
    sys.exit(70)
sys.exit(struct.unpack("!i", code)[0])
'''


def write_client(path: Path, socket_path: Path) -> Path:
    """The `bertkit` script the docs' commands run."""
    path.write_text(CLIENT.format(python=sys.executable, socket=str(socket_path)), encoding="utf-8")
    path.chmod(0o755)
    return path


def _receive(conn: socket.socket) -> tuple[dict, list[int]]:
    data, fds, _, _ = socket.recv_fds(conn, 1 << 20, 3)
    size = struct.unpack("!I", data[:4])[0]
    data = data[4:]
    while len(data) < size:
        more = conn.recv(size - len(data))
        if not more:
            raise ConnectionError("the client went away mid-request")
        data += more
    return json.loads(data), fds


def _run_child(request: dict, fds: list[int], settings: dict) -> int:
    for target, fd in enumerate(fds):
        os.dup2(fd, target)
        os.close(fd)
    os.chdir(request["cwd"])
    os.environ.clear()
    os.environ.update(request["env"])
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    from helpers import docs_substitutions

    argv = docs_substitutions.limit_run(request["argv"])
    docs_substitutions.use_tiny_models(settings["models"])
    sys.argv = ["bertkit", *argv]
    from bertkit.cli import main

    try:
        main(argv)
        return 0
    except SystemExit as done:
        if done.code is None:
            return 0
        if isinstance(done.code, int):
            return done.code
        print(done.code, file=sys.stderr)
        return 1
    finally:
        sys.stdout.flush()
        sys.stderr.flush()


def _reap(flags: int) -> None:
    """Wait for finished children (so that their CPU time counts in this process's, and in the
    docs test's in the end)."""
    try:
        while os.waitpid(-1, flags)[0]:
            pass
    except ChildProcessError:
        pass


def _reap_and_leave(*_) -> None:
    _reap(0)
    os._exit(0)


def serve(socket_path: str, settings: dict) -> None:
    sys.path.insert(0, str(Path(__file__).parents[1]))  # tests/, for `helpers`
    from helpers import docs_substitutions

    docs_substitutions.preload()
    listener = socket.socket(socket.AF_UNIX)
    listener.bind(socket_path)
    listener.listen(16)
    signal.signal(signal.SIGTERM, _reap_and_leave)
    print("ready", flush=True)
    while True:
        conn, _ = listener.accept()
        _reap(os.WNOHANG)
        try:
            request, fds = _receive(conn)
        except (ConnectionError, ValueError, OSError):
            conn.close()
            continue
        if os.fork() == 0:
            listener.close()
            code = 1
            try:
                code = _run_child(request, fds, settings)
            except BaseException:  # a bug in the command: its traceback goes to its stderr
                import traceback

                traceback.print_exc()
                sys.stderr.flush()
            try:
                conn.sendall(struct.pack("!i", code))
            finally:
                os._exit(0)
        for fd in fds:
            os.close(fd)
        conn.close()


if __name__ == "__main__":
    serve(sys.argv[1], json.loads(Path(sys.argv[2]).read_text(encoding="utf-8")))

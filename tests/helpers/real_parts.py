"""The real programs some tests run against (a PostgreSQL server, headless Chromium): found on
this machine, else the test is skipped, except under CI (the `CI` variable set), where a missing
one fails the test: `.ci/run` installs and starts what CI needs, so a skip there would hide that a
promise of the docs went untested."""

from __future__ import annotations

import contextlib
import glob
import os
import secrets
import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path

import pytest


def missing(what: str) -> None:
    """Skip the test, or fail it under CI."""
    if os.environ.get("CI"):
        pytest.fail(f"{what} is needed under CI, and .ci/run should have provided it")
    pytest.skip(f"{what} is not on this machine")


def chromium() -> str:
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if not found:
        missing("Chromium (Debian's chromium package)")
    return found


# what a headless Chromium needs on a machine with no display and no network beyond loopback
CHROMIUM_FLAGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
    "--disable-component-update", "--disable-sync", "--disable-quic",
]  # fmt: skip


def _postgres_program(name: str) -> str | None:
    found = shutil.which(name)
    if found:
        return found
    versions = sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}"))
    return versions[-1] if versions else None


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@contextlib.contextmanager
def postgres_server():
    """A PostgreSQL server of its own in a temporary folder, listening on loopback only, with a
    user and a password; yields its URL (postgresql://tune:PASSWORD@127.0.0.1:PORT/postgres) and
    the password, and stops the server and removes the folder after. initdb refuses to run as
    root: as root, the server runs as the `postgres` user, in a folder of its own under the system
    temporary folder (pytest's tmp_path sits below folders only their owner may enter)."""
    initdb, pg_ctl = _postgres_program("initdb"), _postgres_program("pg_ctl")
    if not (initdb and pg_ctl):
        missing("PostgreSQL (initdb, pg_ctl)")
    folder = Path(tempfile.mkdtemp(prefix="bertkit-pg-"))
    as_user: list[str] = []
    if os.geteuid() == 0:
        as_user = ["runuser", "-u", "postgres", "--"]
        shutil.chown(folder, "postgres")
    data, password = folder / "data", secrets.token_hex(12) + "/p@ss"
    words = folder / "password"
    words.write_text(password + "\n")
    if as_user:
        shutil.chown(words, "postgres")
    subprocess.run([*as_user, initdb, "-D", str(data), "-U", "tune", "--pwfile", str(words), "-A", "scram-sha-256",
                    "-E", "UTF8", "--no-instructions"], check=True, capture_output=True, timeout=120)  # fmt: skip
    words.unlink()
    port = _free_port()
    options = f"-p {port} -k {folder} -c listen_addresses=127.0.0.1 -c max_connections=50 -c fsync=off"
    subprocess.run([*as_user, pg_ctl, "-D", str(data), "-o", options, "-l", str(folder / "log"), "-w", "start"],
                   check=True, capture_output=True, timeout=120)  # fmt: skip
    try:
        from urllib.parse import quote

        yield f"postgresql://tune:{quote(password, safe='')}@127.0.0.1:{port}/postgres", password
    finally:
        subprocess.run([*as_user, pg_ctl, "-D", str(data), "-m", "immediate", "stop"], capture_output=True, timeout=60)
        time.sleep(0.2)
        shutil.rmtree(folder, ignore_errors=True)

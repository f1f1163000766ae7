"""Processes a test starts: the launchers beside this Python (torchrun, accelerate) and a free port for them."""

import sys
from pathlib import Path


def free_port() -> int:
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


BIN = Path(sys.executable).parent

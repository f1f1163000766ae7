"""`bertkit serve`: a bundle behind HTTP (FastAPI on uvicorn), with micro-batching and a page to
try the model. The libraries are the `serve` extra."""

from __future__ import annotations

import signal
from contextlib import contextmanager, suppress

from bertkit.errors import BertkitError


def require_serving() -> None:
    """The `serve` extra is installed, or a clear error saying how to install it."""
    missing = []
    for module in ("fastapi", "uvicorn"):
        try:
            __import__(module)
        except ImportError:
            missing.append(module)
    if missing:
        raise BertkitError(
            f"bertkit serve needs {' and '.join(missing)}, which are not installed: pip install 'bertkit[serve]'"
        )


def serve(
    model: str,
    host: str = "127.0.0.1",
    port: int = 8080,
    max_batch: int = 32,
    max_wait_ms: float = 10,
    limits=None,
    device: str | None = None,
    trust_remote_code: bool = False,
    runtime: str | None = None,
    batch_size: int | None = None,
) -> None:
    """Load `model` and answer HTTP requests until stopped (Ctrl-C or SIGTERM: the requests in
    flight are answered first)."""
    require_serving()
    import uvicorn

    from bertkit.progress import console, status
    from bertkit.serving.app import build_app
    from bertkit.serving.predictor import Predictor

    with status(f"loading {model}"):
        predictor = Predictor(model, device, trust_remote_code, batch_size, runtime)
    app = build_app(predictor, max_batch, max_wait_ms, limits)
    shown = f"[{host}]" if ":" in host else host
    what = f"{predictor.task.name}, {predictor.runtime}"
    console.print(f"[green]serving[/green] {model} ({what}) on http://{shown}:{port}/  (Ctrl-C stops)")
    with _stopping_is_normal():
        uvicorn.run(app, host=host, port=port, log_level="warning", timeout_graceful_shutdown=30)
    console.print(f"[green]stopped[/green]: {app.state.batcher.stats.records:,} texts answered")


@contextmanager
def _stopping_is_normal():
    """Ctrl-C or SIGTERM is how a server is meant to stop: uvicorn answers the requests in flight
    and hands the signal back when done, which must then end the command quietly (exit 0), not
    as an interrupted run."""
    kept = {}
    for name in ("SIGINT", "SIGTERM"):
        number = getattr(signal, name)
        with suppress(ValueError):  # not the main thread
            kept[number] = signal.signal(number, lambda *_: None)
    try:
        yield
    finally:
        for number, handler in kept.items():
            signal.signal(number, handler)


def check_port(host: str, port: int) -> None:
    """The port can be listened on, checked before the model loads (a busy port is the usual
    mistake, and finding it after a minute of loading is unkind)."""
    import socket

    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((host, port))
        except OSError as err:
            raise BertkitError(
                f"--host {host} --port {port}: cannot listen there ({err.strerror}); "
                "give another --port, or stop what is using it"
            ) from None

"""`bertkit serve`: a bundle behind HTTP (FastAPI on uvicorn), with micro-batching and a page to
try the model. The libraries are the `serve` extra."""

from __future__ import annotations

import os
import signal
import socket
from contextlib import contextmanager, suppress

from bertkit.core.adapters.loading import SharedBases
from bertkit.core.errors import BertkitError
from bertkit.core.extras import install_command
from bertkit.core.progress import console, status
from bertkit.serving.predictor import Predictor, public_name


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
            f"bertkit serve needs {' and '.join(missing)}, which are not installed: {install_command('serve')}"
        )


def serve(
    model: str | list[str],
    host: str = "127.0.0.1",
    port: int = 8080,
    max_batch: int = 32,
    max_wait_ms: float = 10,
    limits=None,
    device: str | None = None,
    trust_remote_code: bool = False,
    runtime: str | None = None,
    batch_size: int | None = None,
    listener: socket.socket | None = None,
) -> None:
    """Load `model` (or several: a list) and answer HTTP requests until stopped (Ctrl-C or SIGTERM: the requests in
    flight are answered first). `listener`: the socket bound by `listening_socket` (else bound
    here); the line saying where the server is names the port it really has (`--port 0`: one the
    system chose), and is printed once the server accepts connections."""
    with stopped_while_starting() as starting:
        require_serving()
        import uvicorn
        from rich.markup import escape

        from bertkit.serving.app import build_app  # lazy: it imports FastAPI, the serve extra (checked above)

        listener = listener or listening_socket(host, port)
        if isinstance(model, list) and len(model) > 1:
            predictors = load_several(model, device, trust_remote_code, batch_size, runtime)
            app = build_app(predictors, max_batch, max_wait_ms, limits)
            what = ", ".join(f"{p.describe()['model']}: {p.task.name}" for p in predictors)
            model = f"{len(predictors)} models"
        else:
            model = model[0] if isinstance(model, list) else model
            with status(f"loading {model}"):
                predictor = Predictor(model, device, trust_remote_code, batch_size, runtime)
            app = build_app(predictor, max_batch, max_wait_ms, limits)
            what = f"{predictor.task.name}, {predictor.runtime}"
        shown = f"[{host}]" if ":" in host else host
        bound = listener.getsockname()[1]

        class Server(uvicorn.Server):
            async def startup(self, sockets=None):
                await super().startup(sockets)
                if not self.should_exit:  # a signal that came while starting is a stop while starting
                    starting.server = self
                    console.print(
                        f"[green]serving[/green] {escape(model)} ({what}) on http://{shown}:{bound}/  (Ctrl-C stops)",
                        soft_wrap=True,
                    )

        config = uvicorn.Config(app, host=host, port=bound, log_level="warning", timeout_graceful_shutdown=30)
        Server(config).run(sockets=[listener])
    answered = sum(batcher.stats.records for batcher in app.state.batchers.values())
    console.print(f"[green]stopped[/green]: {answered:,} texts answered")


def load_several(paths: list[str], device, trust_remote_code: bool, batch_size, runtime) -> list:
    """One `Predictor` per path, adapter bundles of one base sharing its weights; two paths that
    a request could not tell apart (the same last name) are refused."""

    names = [public_name(p) for p in paths]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise BertkitError(
            f"--model: several models are named {', '.join(twice)} (the last part of their paths), and a request "
            "names its model by it: give each a folder of its own name"
        )
    shared = SharedBases()
    predictors = []
    for path in paths:
        with status(f"loading {path}"):
            predictors.append(Predictor(path, device, trust_remote_code, batch_size, runtime, shared))
    return predictors


class _Starting:
    """The uvicorn server once it is up (`stopped_while_starting`)."""

    server = None


@contextmanager
def stopped_while_starting():
    """SIGTERM, SIGINT or SIGHUP before the server is up ends the command at once with 128 + the
    signal (143 for SIGTERM), whatever it is doing: loading torch and the model runs C++ code that
    calls back into Python, and an exception raised there by a signal handler (the CLI's usual
    `Interrupted`) aborts the process (exit 134) instead of ending it. Nothing is written while
    starting, so there is nothing to clean up. Once the server is up, uvicorn handles SIGTERM and
    SIGINT: it answers the requests in flight, then hands the signal back, which then ends the
    command quietly (exit 0); SIGHUP stops it the same way."""
    starting = _Starting()

    def handle(number, frame):
        if starting.server is not None:
            if number == getattr(signal, "SIGHUP", None):
                starting.server.handle_exit(signal.SIGTERM, frame)
            return  # else uvicorn handing back the signal that stopped the server: its normal end
        name = signal.Signals(number).name
        os.write(2, f"error: {name} while starting; the server was not started\n".encode())
        os._exit(128 + number)

    kept = {}
    for name in ("SIGINT", "SIGTERM", "SIGHUP"):
        number = getattr(signal, name, None)
        if number is None or signal.getsignal(number) is signal.SIG_IGN:  # `nohup` keeps SIGHUP ignored
            continue
        with suppress(ValueError):  # not the main thread
            kept[number] = signal.signal(number, handle)
    try:
        yield starting
    finally:
        for number, handler in kept.items():
            signal.signal(number, handler)


def listening_socket(host: str, port: int) -> socket.socket:
    """The server's socket, bound (not yet listening) before the model loads: a busy port is the
    usual mistake, and finding it after a minute of loading is unkind; the port stays the
    server's while the model loads, and `--port 0` has its real number before the server starts."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    listener = socket.socket(family, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        listener.bind((host, port))
    except OSError as err:
        listener.close()
        raise BertkitError(
            f"--host {host} --port {port}: cannot listen there ({err.strerror or err}); "
            "give another --port, or stop what is using it"
        ) from None
    return listener

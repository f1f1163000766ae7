"""`bertkit serve`: answer HTTP requests with a model (FastAPI on uvicorn, micro-batched)."""

from __future__ import annotations

import typer

from bertkit.cli.options import COUNT_LIMIT, RuntimeOption, TrustOption


def serve(
    model: list[str] = typer.Option(
        ...,
        "--model",
        "-m",
        help="Model bundle (or any HF model directory); repeat to serve several (a request then names its "
        '"model"; adapter bundles of one base share it).',
    ),
    host: str = typer.Option("127.0.0.1", "--host", help="Address to listen on (0.0.0.0: every interface)."),
    port: int = typer.Option(8080, "--port", "-p", min=0, max=65535, help="Port to listen on."),
    max_batch: int = typer.Option(
        32, "--max-batch", min=1, max=COUNT_LIMIT, help="Most texts run through the model at once."
    ),
    max_wait_ms: float = typer.Option(
        10, "--max-wait-ms", min=0, help="How long a request waits for others to share its batch."
    ),
    batch_size: int | None = typer.Option(
        None, "--batch-size", "-b", min=1, help="Texts per forward pass in a batch (default: 8 on a CPU, 32 on a GPU)."
    ),
    max_texts: int = typer.Option(
        256, "--max-texts", min=1, max=COUNT_LIMIT, help="Most texts in one request (more: 413)."
    ),
    max_chars: int = typer.Option(
        200_000, "--max-chars", min=1, help="Most characters of text in one request (more: 413)."
    ),
    max_body_bytes: int | None = typer.Option(
        None,
        "--max-body-bytes",
        min=1,
        help="Largest request body in bytes (more: 413; default: 4 MiB, or 16 bytes a character of --max-chars).",
    ),
    device: str | None = typer.Option(None, "--device", help="cpu, cuda, ... (default: a GPU if there is one)."),
    runtime: str = RuntimeOption,
    trust_remote_code: bool = TrustOption,
) -> None:
    """Serve a model over HTTP: POST /predict (and /embed), GET /health, /info, the API docs at
    /docs, and a page to try the model at /. Concurrent requests are gathered into batches.
    With several --model, each request names its model ("model": the folder's name)."""
    from bertkit.serving import listening_socket
    from bertkit.serving import serve as run
    from bertkit.serving.limits import Limits

    limits = Limits(max_texts, max_chars, max_body_bytes)
    with listening_socket(host, port) as listener:  # before the model loads: a busy port is refused at once
        run(model, host, port, max_batch, max_wait_ms, limits, device, trust_remote_code, runtime, batch_size, listener)

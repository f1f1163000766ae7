"""`bertkit serve` under load, on loopback only: requests/s and latency with micro-batching
against `--max-batch 1`, errors, and whether every answer equals offline `bertkit predict`.

The model: a MiniLM classifier (the packaged all-MiniLM-L6-v2 with a two-label head; give
`--model` for a trained bundle: the cost per request is the same). The texts: SST-2 dev
sentences, one per request. Each setting starts its own server process, warms it up, then
`--clients` concurrent clients send `--requests` requests in all (bounded in count and time).

The answers are compared with an offline `bertkit predict` run on the same texts: the label, the
scores to 1e-5, and the whole record.

With `--bad-every N`, every N-th request is one the server must refuse (a lone UTF-16 surrogate
as its text): it must get its 422 without joining a batch, so the mean batch stays what it is
without bad requests (before requests were checked ahead of batching, the bad one joined a batch,
which failed, and all its requests ran again one at a time).

Usage: python bench/serve_load.py [--requests 2000] [--clients 32] [--model DIR] [--bad-every N]
Writes bench/results/serve_load.json (serve_load_bad.json with --bad-every) and prints a table.
"""

from __future__ import annotations

import argparse
import asyncio
import csv
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

from common import DATA, ROOT, minilm_path, require, save, table

TIME_LIMIT = 120  # seconds for one setting's requests, at most


def sst2_sentences(n: int) -> list[str]:
    with open(require(DATA / "en/sst2/dev.tsv"), encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle, delimiter="\t", quoting=csv.QUOTE_NONE))
    return [row["text"] for row in rows][:n]


def classifier(folder: Path) -> Path:
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    target = folder / "minilm-classifier"
    labels = {0: "negative", 1: "positive"}
    AutoModelForSequenceClassification.from_pretrained(minilm_path(), id2label=labels, num_labels=2).save_pretrained(
        target
    )
    AutoTokenizer.from_pretrained(minilm_path()).save_pretrained(target)
    return target


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def start(model: Path, max_batch: int) -> tuple[subprocess.Popen, str]:
    port = free_port()
    command = [sys.executable, "-m", "bertkit", "serve", "--model", str(model), "--port", str(port)]
    command += ["--max-batch", str(max_batch), "--max-wait-ms", "10"]
    process = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if process.poll() is not None:
            sys.exit(f"the server stopped: {process.stderr.read()}")
        try:
            with urllib.request.urlopen(url + "/health", timeout=1):
                return process, url
        except OSError:
            time.sleep(0.3)
    process.kill()
    sys.exit("the server did not come up in 2 minutes")


class Connection:
    """One keep-alive HTTP/1.1 connection, written by hand: a general client (httpx) costs more
    CPU per request than the server does, which on 2 cores would measure the client."""

    def __init__(self, url: str):
        host, port = url.removeprefix("http://").split(":")
        self.host, self.port = host, int(port)

    async def open(self) -> None:
        self.reader, self.writer = await asyncio.open_connection(self.host, self.port)

    async def request(self, method: str, path: str, body: dict | None = None) -> tuple[int, bytes]:
        data = json.dumps(body).encode() if body is not None else b""
        head = f"{method} {path} HTTP/1.1\r\nHost: {self.host}\r\nContent-Type: application/json\r\n"
        self.writer.write(head.encode() + f"Content-Length: {len(data)}\r\n\r\n".encode() + data)
        status_line = await self.reader.readline()
        if not status_line:  # the server closed it (idle past uvicorn's keep-alive timeout)
            raise ConnectionResetError("the server closed the connection")
        length = 0
        while (line := await self.reader.readline()) not in (b"\r\n", b""):
            name, _, value = line.decode().partition(":")
            if name.lower() == "content-length":
                length = int(value)
        return int(status_line.split()[1]), await self.reader.readexactly(length)

    def close(self) -> None:
        self.writer.close()


BAD = {"text": "\ud800"}  # half a character: refused (422) before it can join a batch


async def load(url: str, texts: list[str], requests: int, clients: int, bad_every: int = 0) -> dict:
    latencies: list[float] = []
    refused = 0
    answers: dict[int, dict] = {}
    errors: list[str] = []
    queue: asyncio.Queue[int] = asyncio.Queue()
    for number in range(requests):
        queue.put_nowait(number)
    connections = [Connection(url) for _ in range(clients)]
    for connection in connections:
        await connection.open()

    async def one_client(connection: Connection, deadline: float) -> None:
        nonlocal refused
        while not queue.empty() and time.monotonic() < deadline:
            number = queue.get_nowait()
            bad = bad_every and number % bad_every == bad_every - 1
            sent = time.perf_counter()
            try:
                body = BAD if bad else {"text": texts[number % len(texts)]}
                status, body = await connection.request("POST", "/predict", body)
            except (OSError, asyncio.IncompleteReadError, ValueError) as err:
                errors.append(f"{type(err).__name__}: {err}")
                await connection.open()
                continue
            latencies.append(time.perf_counter() - sent)
            if bad and status == 422:
                refused += 1
            elif status != 200 or bad:
                errors.append(f"{status}: {body[:200]!r}")
            else:
                answers[number] = json.loads(body)["results"][0]

    # warm up (the first batches pay for lazy set-up), all at once: one by one, on a busy machine
    # the first connections would sit idle past uvicorn's keep-alive timeout (5 s) and be closed
    await asyncio.gather(*(connection.request("POST", "/predict", {"text": texts[0]}) for connection in connections))
    started = time.perf_counter()
    deadline = time.monotonic() + TIME_LIMIT
    await asyncio.gather(*(one_client(connection, deadline) for connection in connections))
    elapsed = time.perf_counter() - started
    asking = Connection(url)  # a fresh one: the others may have sat idle past the keep-alive timeout
    await asking.open()
    batching = json.loads((await asking.request("GET", "/info"))[1])["batching"]
    asking.close()
    for connection in connections:
        connection.close()
    ms = sorted(x * 1000 for x in latencies)

    def pct(p: float) -> float:
        return ms[min(len(ms) - 1, int(p / 100 * len(ms)))] if ms else float("nan")

    return {
        "requests": len(latencies),
        "requests_per_s": round(len(latencies) / elapsed, 1),
        "p50_ms": round(statistics.median(ms), 1) if ms else None,
        "p95_ms": round(pct(95), 1),
        "p99_ms": round(pct(99), 1),
        "errors": len(errors) + (requests - len(latencies) - len(errors)),
        "refused": refused,
        "first_errors": errors[:3],
        "mean_batch": batching["mean"],
        "answers": answers,
    }


def offline(model: Path, texts: list[str], folder: Path) -> list[dict]:
    source, target = folder / "texts.jsonl", folder / "offline.jsonl"
    source.write_text("".join(json.dumps({"text": t}) + "\n" for t in texts), encoding="utf-8")
    subprocess.run(
        [sys.executable, "-m", "bertkit", "predict", "-m", str(model), "-i", str(source), "-o", str(target)],
        cwd=ROOT,
        check=True,
        capture_output=True,
    )
    return [json.loads(line) for line in target.read_text(encoding="utf-8").splitlines()]


def agreement(answers: dict[int, dict], expected: list[dict]) -> dict:
    """Answers against offline predict: the same label always; scores equal to 1e-5 (a text
    batched with others is padded differently, which moves the 7th digit at most)."""
    same_label = close = exact = 0
    for number, got in answers.items():
        want = expected[number % len(expected)]
        same_label += got["label"] == want["label"]
        close += all(abs(got["scores"][k] - want["scores"][k]) <= 1e-5 for k in want["scores"])
        exact += got == want
    total = len(answers) or 1
    return {"same_label": same_label / total, "scores_within_1e-5": close / total, "identical": exact / total}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--requests", type=int, default=2000)
    parser.add_argument("--clients", type=int, default=32)
    parser.add_argument("--texts", type=int, default=500)
    parser.add_argument("--model", type=Path)
    parser.add_argument("--bad-every", type=int, default=0, help="every N-th request one the server must refuse")
    args = parser.parse_args()
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    texts = sst2_sentences(args.texts)
    with tempfile.TemporaryDirectory() as temp:
        folder = Path(temp)
        model = args.model or classifier(folder)
        expected = offline(model, texts, folder)
        rows = []
        for max_batch in (32,) if args.bad_every else (32, 1):  # with bad requests: the batches are the point
            process, url = start(model, max_batch)
            try:
                result = asyncio.run(load(url, texts, args.requests, args.clients, args.bad_every))
            finally:
                process.terminate()
                process.wait(60)
            answers = result.pop("answers")
            rows.append({"max_batch": max_batch, **result, **agreement(answers, expected)})
    ratio = rows[0]["requests_per_s"] / rows[1]["requests_per_s"] if len(rows) > 1 else float("nan")
    columns = ["max_batch", "requests", "requests_per_s", "p50_ms", "p95_ms", "p99_ms", "errors", "refused"]
    columns += ["mean_batch"]
    columns += ["same_label", "scores_within_1e-5", "identical"]
    print(table(rows, columns))
    print(f"micro-batching / batch size 1: {ratio:.2f}x requests/s ({args.clients} clients)")
    name = "serve_load_bad" if args.bad_every else "serve_load"
    results = {"clients": args.clients, "bad_every": args.bad_every, "rows": rows, "speedup": round(ratio, 2)}
    saved = save(name, results)
    print(f"written to {saved}")


if __name__ == "__main__":
    main()

"""The HTTP face of a `Predictor`: FastAPI routes over a `MicroBatcher`.

`POST /predict` takes `{"texts": [...]}`, `{"text": "..."}` or `{"records": [{...}]}` (records
with the fields `bertkit predict` reads: a pair's two texts, a question and its context) and
answers `{"results": [...]}`, one result per input, exactly the records `bertkit predict` writes.
`POST /embed` is the same for embed models. A malformed request is a 422 naming the field, a
request over the limits a 413 naming them, a model failure a 500 with its message; the server
keeps serving after each.
"""

from __future__ import annotations

from contextlib import asynccontextmanager
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import HTMLResponse, JSONResponse, Response
from pydantic import BaseModel, ConfigDict, model_validator

from bertkit.errors import BertkitError
from bertkit.outputs.records import json_line
from bertkit.serving.batching import MicroBatcher
from bertkit.serving.page import page
from bertkit.serving.predictor import Limits, Predictor


class PredictRequest(BaseModel):
    """One of `texts`, `text` or `records`."""

    model_config = ConfigDict(extra="forbid")
    texts: list[str] | None = None
    text: str | None = None
    records: list[dict[str, Any]] | None = None

    @model_validator(mode="after")
    def _one_input(self):
        given = [name for name in ("texts", "text", "records") if getattr(self, name) is not None]
        if len(given) != 1:
            raise ValueError(f'give exactly one of "texts", "text" or "records" (got {", ".join(given) or "none"})')
        return self


class _Refused(Exception):
    def __init__(self, status: int, detail):
        self.status, self.detail = status, detail


def build_app(predictor: Predictor, max_batch: int = 32, max_wait_ms: float = 10, limits: Limits | None = None):
    limits = limits or Limits()
    batcher = MicroBatcher(predictor.run, max_batch, max_wait_ms / 1000)

    @asynccontextmanager
    async def lifespan(app):
        await batcher.start()
        yield
        await batcher.stop()  # uvicorn has answered the requests in flight by now

    app = FastAPI(
        title=f"bertkit: {predictor.describe()['model']}",
        description=f"A {predictor.task.name} model served by bertkit.",
        lifespan=lifespan,
    )
    app.state.batcher = batcher

    @app.exception_handler(_Refused)
    async def _refused(request: Request, err: _Refused):
        return JSONResponse({"detail": err.detail}, status_code=err.status)

    async def answer(body: PredictRequest) -> Response:
        records = _records(predictor, body, limits)
        try:
            results = await batcher.submit(records)
        except BertkitError as err:  # the model refuses an input (fill-mask text without [MASK], ...)
            field = "records" if body.records is not None else "texts" if body.texts is not None else "text"
            raise _Refused(422, [_problem(("body", field), str(err))]) from None
        except Exception as err:  # noqa: BLE001 - the server keeps serving
            raise _Refused(500, f"the model failed on this request: {type(err).__name__}: {err}") from None
        return Response(json_line({"results": results}), media_type="application/json")

    @app.post("/predict", summary="Predict for texts or records, as `bertkit predict` does")
    async def predict(body: PredictRequest) -> Response:
        return await answer(body)

    @app.post("/embed", summary="Sentence vectors (embed models)")
    async def embed(body: PredictRequest) -> Response:
        if predictor.task.name != "embed":
            raise _Refused(400, f"this is a {predictor.task.name} model, not an embed model: POST /predict")
        return await answer(body)

    @app.get("/health", summary="Whether the server is up")
    async def health() -> dict:
        return {"status": "ok"}

    @app.get("/info", summary="The model, its task, labels and runtime; the limits and batching")
    async def info() -> dict:
        batching = {"max_batch": max_batch, "max_wait_ms": max_wait_ms, "batch_size": predictor.options.batch_size}
        batching.update(batcher.stats.to_json())
        return {**predictor.describe(), "limits": limits.to_json(), "batching": batching}

    @app.get("/", response_class=HTMLResponse, include_in_schema=False)
    async def try_it() -> str:
        return page(predictor.describe())

    return app


def _records(predictor: Predictor, body: PredictRequest, limits: Limits) -> list[dict]:
    """The request's records, checked: the fields the model reads are there and are text, and the
    request is within the limits."""
    try:
        if body.records is not None:
            records = body.records
            for number, record in enumerate(records):
                for name in predictor.fields():
                    value = record.get(name)
                    if not isinstance(value, str):
                        got = "missing" if name not in record else f"{type(value).__name__}, not text"
                        raise _Refused(422, [_problem(("body", "records", number, name), f"{name!r} is {got}")])
        else:
            records = predictor.records_of_texts(body.texts if body.texts is not None else [body.text])
    except BertkitError as err:
        raise _Refused(422, [_problem(("body", "texts" if body.texts is not None else "text"), str(err))]) from None
    if len(records) > limits.max_texts:
        raise _Refused(413, f"{len(records):,} texts in one request; at most {limits.max_texts:,} (--max-texts)")
    characters = predictor.characters(records)
    if characters > limits.max_chars:
        raise _Refused(
            413, f"{characters:,} characters of text in one request; at most {limits.max_chars:,} (--max-chars)"
        )
    return records


def _problem(where: tuple, message: str) -> dict:
    """One problem in the shape FastAPI gives its own validation errors."""
    return {"loc": list(where), "msg": message, "type": "value_error"}

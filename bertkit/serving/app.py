"""The HTTP face of a `Predictor`: FastAPI routes over a `MicroBatcher`.

`POST /predict` takes `{"texts": [...]}`, `{"text": "..."}` or `{"records": [{...}]}` (records
with the fields `bertkit predict` reads: a pair's two texts, a question and its context) and
answers `{"results": [...]}`, one result per input, exactly the records `bertkit predict` writes.
`POST /embed` is the same for embed models. The body is read as `bertkit.serving.requests`
says (at most `--max-body-bytes`, strict JSON), and each record is checked as `bertkit predict`
checks its input's (`Prediction.check_record`) before the request joins a batch. A malformed request
is a 422 naming the field (and the record's index), a request over the limits a 413 naming them,
a failure that is not the client's a 500 with a generic message and an error id, under which the
server's log holds the details; the server keeps serving after each.
"""

from __future__ import annotations

import logging
import uuid
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import HTMLResponse, Response
from pydantic import BaseModel, ConfigDict, StrictFloat, StrictInt, StrictStr, ValidationError, model_validator

from bertkit.core.errors import BertkitError
from bertkit.serving.batching import MicroBatcher
from bertkit.serving.limits import Limits
from bertkit.serving.page import page
from bertkit.serving.predictor import Predictor
from bertkit.serving.requests import Refused, parse_body, problem, read_body, strict_json


class PredictRequest(BaseModel):
    """One of `texts`, `text` or `records`."""

    model_config = ConfigDict(extra="forbid")
    # a text may be a number, as in a record's text field and in `bertkit predict`'s input (read as
    # it is written); true/false, lists and objects are refused in both
    texts: list[StrictStr | StrictInt | StrictFloat | None] | None = None
    model: StrictStr | None = None  # which model answers, when the server has several (`/info` lists them)
    text: StrictStr | StrictInt | StrictFloat | None = None
    records: list[dict[str, Any]] | None = None

    @model_validator(mode="after")
    def _one_input(self):
        given = [name for name in ("texts", "text", "records") if getattr(self, name) is not None]
        if len(given) != 1:
            raise ValueError(f'give exactly one of "texts", "text" or "records" (got {", ".join(given) or "none"})')
        return self

    def form(self) -> str:
        """Which of the three the request gives."""
        return "records" if self.records is not None else "texts" if self.texts is not None else "text"


@dataclass
class Served:
    """The models one server answers for (by the name `/info` lists), each with its batches, and
    the limits and batching every request meets."""

    by_name: dict[str, Predictor]
    batchers: dict[str, MicroBatcher]
    limits: Limits
    max_batch: int
    max_wait_ms: float

    @property
    def several(self) -> bool:
        return len(self.by_name) > 1

    @property
    def first(self) -> Predictor:
        return next(iter(self.by_name.values()))

    def chosen(self, body: PredictRequest) -> str:
        """The name of the model that answers `body`: the one named, or the only one."""
        if body.model is None and not self.several:
            return next(iter(self.by_name))
        if body.model in self.by_name:
            return body.model
        names = ", ".join(f'"{n}"' for n in self.by_name)
        said = "names no model" if body.model is None else f'names the model "{body.model}", which is not served'
        raise Refused(422, [problem(("body", "model"), f'the request {said}: give "model": one of {names}')])

    async def answer(self, request: Request, task: str | None = None) -> Response:
        """The results of one request (read, checked, batched), or the refusal that names what is wrong."""
        try:
            body = _request_body(parse_body(await read_body(request, self.limits.body_bytes())))
            name = self.chosen(body)
            served_task = self.by_name[name].task.name
            if task is not None and served_task != task:
                raise Refused(400, f"this is a {served_task} model, not an embed model: POST /predict")
            records = _records(self.by_name[name], body, self.limits)
            try:
                results = await self.batchers[name].submit(records)
            except BertkitError as err:  # the model refuses an input the checks let through
                raise Refused(422, [problem(("body", body.form()), str(err))]) from None
            # strict JSON: a number that is not finite (a bug, never an answer) fails here, a 500
            return Response(strict_json({"results": results}), media_type="application/json")
        except Refused:
            raise
        except Exception as err:  # noqa: BLE001 - the server keeps serving
            return _internal_error(err)

    def batching(self, name: str) -> dict:
        size = self.by_name[name].options.batch_size
        settings = {"max_batch": self.max_batch, "max_wait_ms": self.max_wait_ms, "batch_size": size}
        return settings | self.batchers[name].stats.to_json()

    def info(self) -> dict:
        if self.several:
            models = [{**p.describe(), "batching": self.batching(name)} for name, p in self.by_name.items()]
            return {"models": models, "limits": self.limits.to_json()}
        name = next(iter(self.by_name))
        return {**self.first.describe(), "limits": self.limits.to_json(), "batching": self.batching(name)}


def build_app(predictors, max_batch: int = 32, max_wait_ms: float = 10, limits: Limits | None = None):
    """The app for one `Predictor`, or several (a list): then each request names its model
    (`"model": NAME`, the name `/info` lists), and each model has its own batches."""
    served = _served(predictors, max_batch, max_wait_ms, limits or Limits())
    app = _app(served)
    _error_handlers(app)
    _prediction_routes(app, served)
    _about_routes(app, served)
    return app


def _served(predictors, max_batch: int, max_wait_ms: float, limits: Limits) -> Served:
    predictors = predictors if isinstance(predictors, list) else [predictors]
    by_name = {p.describe()["model"]: p for p in predictors}
    batchers = {name: MicroBatcher(p.run, max_batch, max_wait_ms / 1000) for name, p in by_name.items()}
    return Served(by_name, batchers, limits, max_batch, max_wait_ms)


def _app(served: Served) -> FastAPI:
    """The app, its batchers started with it and stopped after the requests in flight."""

    @asynccontextmanager
    async def lifespan(app):
        for each in served.batchers.values():
            await each.start()
        yield
        for each in served.batchers.values():
            await each.stop()  # uvicorn has answered the requests in flight by now

    names = ", ".join(served.by_name)
    description = (
        f"{len(served.by_name)} models served by bertkit."
        if served.several
        else f"A {served.first.task.name} model served by bertkit."
    )
    app = FastAPI(title=f"bertkit: {names}", description=description, lifespan=lifespan)
    app.state.batcher, app.state.batchers = next(iter(served.batchers.values())), served.batchers
    return app


def _error_handlers(app: FastAPI) -> None:
    @app.exception_handler(Refused)
    async def _refused(request: Request, err: Refused):
        return Response(strict_json({"detail": err.detail}), status_code=err.status, media_type="application/json")

    @app.exception_handler(Exception)
    async def _failed(request: Request, err: Exception):  # a bug: the details go to the log, not the client
        return _internal_error(err)


def _prediction_routes(app: FastAPI, served: Served) -> None:
    schema = {"requestBody": {"required": True, "content": {"application/json": {"schema": _SCHEMA}}}}

    @app.post("/predict", summary="Predict for texts or records, as `bertkit predict` does", openapi_extra=schema)
    async def predict(request: Request) -> Response:
        return await served.answer(request)

    @app.post("/embed", summary="Sentence vectors (embed models)", openapi_extra=schema)
    async def embed(request: Request) -> Response:
        if not served.several and served.first.task.name != "embed":
            raise Refused(400, f"this is a {served.first.task.name} model, not an embed model: POST /predict")
        return await served.answer(request, "embed")


def _about_routes(app: FastAPI, served: Served) -> None:
    @app.get("/health", summary="Whether the server is up")
    async def health() -> dict:
        return {"status": "ok"}

    @app.get("/info", summary="The model, its task, labels and runtime; the limits and batching")
    async def info() -> dict:
        return served.info()

    @app.get("/", response_class=HTMLResponse, include_in_schema=False)
    async def try_it(model: str | None = None) -> Response:
        """The page for one model: the first, or `?model=NAME`; with several, it names the model in
        each request it sends and links to the others' pages."""
        if model is not None and model not in served.by_name:
            names = ", ".join(served.by_name)
            return Response(f"no model {model!r} is served here; models: {names}", 404, media_type="text/plain")
        name = model or next(iter(served.by_name))
        return HTMLResponse(page(served.by_name[name].describe(), list(served.by_name) if served.several else None))


_SCHEMA = PredictRequest.model_json_schema()
_log = logging.getLogger("uvicorn.error")  # uvicorn's own log: where a server's operator looks


def _internal_error(err: Exception) -> Response:
    """500 for a failure that is not the client's: a generic answer with an error id, and the
    details (the exception and its traceback) under that id in the server's log."""
    error_id = uuid.uuid4().hex[:12]
    _log.error("error %s: %s: %s", error_id, type(err).__name__, err, exc_info=err)
    detail = f"the server failed on this request (error {error_id}; its log has the details)"
    body = strict_json({"detail": detail, "error_id": error_id})
    return Response(body, status_code=500, media_type="application/json")


def _request_body(value) -> PredictRequest:
    try:
        return PredictRequest.model_validate(value)
    except ValidationError as err:
        problems = [problem(("body", *e["loc"]), e["msg"], e["type"]) for e in err.errors(include_url=False)]
        raise Refused(422, problems) from None


def _records(predictor: Predictor, body: PredictRequest, limits: Limits) -> list[dict]:
    """The request's records, checked as `bertkit predict` checks its input's, and within the
    limits."""
    form = body.form()
    if form == "records":
        records = body.records
    else:
        try:
            records = predictor.records_of_texts(body.texts if form == "texts" else [body.text])
        except BertkitError as err:
            raise Refused(422, [problem(("body", form), str(err))]) from None
    if len(records) > limits.max_texts:
        raise Refused(413, f"{len(records):,} texts in one request; at most {limits.max_texts:,} (--max-texts)")
    characters = _characters(records)
    if characters > limits.max_chars:
        raise Refused(
            413, f"{characters:,} characters of text in one request; at most {limits.max_chars:,} (--max-chars)"
        )

    def where(index: int) -> str:
        return "text" if form == "text" else f"{form}[{index}]"

    found = predictor.problems(records, where)
    if found:
        raise Refused(422, [problem(_location(form, index, field), message) for index, field, message in found])
    return records


def _location(form: str, index: int, field: str | None) -> tuple:
    if form == "text":
        return ("body", "text")
    if form == "texts" or field is None:
        return ("body", form, index)
    return ("body", form, index, field)


def _characters(records: list[dict]) -> int:
    """The characters of every string in the records (texts, token lists, ids, other fields)."""
    total, stack = 0, list(records)
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            total += len(item)
        elif isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return total

"""A bundle loaded once and kept ready: records in, the results `bertkit predict` writes out."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from bertkit.core.errors import BertkitError
from bertkit.prediction import aligned, is_empty
from bertkit.serving.limits import Limits  # noqa: F401 - where it used to be
from bertkit.tasks import get_task
from bertkit.tasks.bundle import open_bundle
from bertkit.tasks.contract.options import PredictOptions

# the fields of a request's records that `bertkit predict` reads, per task (beside the text column)
_QA_FIELDS = ("question", "context")


class Predictor:
    """One bundle, its task, tokenizer and model, loaded once; `run` is what `predict` does for a
    list of records, so a served result equals the line `bertkit predict` writes for it."""

    def __init__(
        self,
        model: str,
        device: str | None = None,
        trust_remote_code: bool = False,
        batch_size: int | None = None,
        runtime: str | None = None,
        shared=None,
    ):
        """`shared`: a `SharedBases` (bertkit/core/adapters/loading.py) that the models of one server
        share, so adapter bundles of one base hold its weights once."""
        self.path = model
        bundle = open_bundle(model, trust_remote_code, runtime)
        self.task = get_task(bundle.task)
        self.tokenizer = bundle.load_tokenizer()
        self.network = bundle.load_model(self.task.auto_model, device, shared=shared)
        self.info = bundle.info  # after load_model, which may correct max_length
        self.options = PredictOptions(batch_size=batch_size or self.measured_batch_size())
        self.options = replace(self.options, text_column=self.options.text_field(self.info))
        self.runtime = bundle.runtime  # torch, or onnx for an exported bundle

    def measured_batch_size(self) -> int:
        """Texts per forward pass when not given: 8 on a CPU, 32 on a GPU. A gathered batch is
        sorted by length and run in passes of this many, so short texts are not padded to the
        longest of 32. Measured on MiniLM with SST-2 sentences on a 2-core CPU: 5.6 ms a text one
        at a time, 2.9 in passes of 8, 4.1 in passes of 32 (bench/serve_load.py's docstring)."""
        device = getattr(self.network, "device", None)
        return 32 if getattr(device, "type", "cpu") == "cuda" else 8

    @property
    def text_column(self) -> str:
        return self.options.text_column

    def fields(self) -> list[str]:
        """The fields a record must hold."""
        if self.task.name == "qa":
            return list(_QA_FIELDS)
        pair = self.options.pair_field(self.info) if self.task.name == "classify" else None  # embed: one text each
        return [self.text_column] + ([pair] if pair else [])

    def records_of_texts(self, texts: list[str]) -> list[dict]:
        """`{"texts": [...]}` as records: each text in the field the model reads."""
        if len(self.fields()) > 1:
            example = ", ".join(f"{name!r}: ..." for name in self.fields())
            raise BertkitError(
                f"this {self.task.name} model reads records with the fields {', '.join(self.fields())}: "
                f"send {{'records': [{{{example}}}]}}, not 'texts'"
            )
        return [{self.text_column: text} for text in texts]

    def problems(self, records: list[dict], where: Callable[[int], str]) -> list[tuple[int, str | None, str]]:
        """(index, field, message) for each record that `bertkit predict` would refuse, found by
        the same check (`Prediction.check_record`), before the request joins a batch: a request that
        cannot be answered never shares a batch with others. `where(index)` names a record."""
        found, seen = [], {}
        for index, record in enumerate(records):
            if is_empty(self.task, record, self.info, self.options):
                continue
            try:
                self.task.prediction.check_record(record, self.tokenizer, self.info, self.options, where(index), seen)
            except BertkitError as err:
                field = getattr(err, "field", None)
                missing = field is not None and field not in record
                found.append((index, field, self._no_field(record, field, where(index)) if missing else str(err)))
        return found

    def _no_field(self, record: dict, field: str, where: str) -> str:
        """A record without a field the model reads, said in the request's terms: `predict`'s
        message names its options (--text-column) or training settings, which a client cannot set."""
        present = ", ".join(f"'{name}'" for name in map(str, record)) or "none"
        wanted = self.fields()
        if self.task.name == "ner":
            tokens = (self.info.get("ner") or {}).get("tokens_field", "tokens")
            reads = f"'{wanted[0]}' (a text) or '{tokens}' (a list of words)"
        else:
            reads = " and ".join(f"'{name}'" for name in wanted)
        return (
            f"{where}: no '{field}' field (it has {present}); this {self.task.name} model reads {reads} from each "
            f"record: send {{\"records\": [{{\"{field}\": ...}}]}}"
            + ("" if len(wanted) > 1 else ', or {"texts": [...]}')
        )

    def run(self, records: list[dict]) -> list[dict]:
        """The results of records already checked (`problems`), one request's or several."""
        return list(aligned(self.task, self.network, self.tokenizer, self.info, records, self.options, check=False))

    def describe(self) -> dict:
        """What `GET /info` says about the model."""
        info = self.info
        labels = info.get("labels")
        return {
            "model": public_name(self.path),
            "task": self.task.name,
            "runtime": self.runtime,
            "labels": list(labels) if labels else None,
            "problem_type": info.get("problem_type"),
            "fields": self.fields(),
            "max_length": info.get("max_length"),
            "base_model": public_name(info.get("base_model")),
        }


def public_name(name: str | None) -> str | None:
    """What a client may see of a model's name: a hub id as it is (`bert-base-uncased`,
    `org/name`), a local path as its last part only (where the server keeps its files is nobody
    else's business)."""
    if not name:
        return name
    text = str(name)
    local = (
        Path(text).is_absolute()
        or text.startswith((".", "~"))
        or "\\" in text
        or text.count("/") != 1
        or Path(text).exists()
    )
    return Path(text.replace("\\", "/")).resolve().name if local else text

"""A bundle loaded once and kept ready: records in, the results `bertkit predict` writes out."""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

from bertkit.bundle import open_bundle
from bertkit.errors import BertkitError
from bertkit.prediction import aligned
from bertkit.tasks import get_task
from bertkit.tasks.options import PredictOptions

# the fields of a request's records that `bertkit predict` reads, per task (beside the text column)
_QA_FIELDS = ("question", "context")


@dataclass
class Limits:
    """How much one request may ask: the answer to more is 413 with these numbers."""

    max_texts: int = 256
    max_chars: int = 200_000  # all the text fields of a request together

    def to_json(self) -> dict:
        return {"max_texts": self.max_texts, "max_chars": self.max_chars}


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
    ):
        self.path = model
        bundle = open_bundle(model, trust_remote_code, runtime)
        self.task = get_task(bundle.task)
        self.tokenizer = bundle.load_tokenizer()
        self.network = bundle.load_model(self.task.auto_model, device)
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

    def characters(self, records: list[dict]) -> int:
        texts = (record.get(key) for record in records for key in self.fields())
        return sum(len(text) for text in texts if isinstance(text, str))

    def run(self, records: list[dict]) -> list[dict]:
        return list(aligned(self.task, self.network, self.tokenizer, self.info, records, self.options))

    def describe(self) -> dict:
        """What `GET /info` says about the model."""
        info = self.info
        labels = info.get("labels")
        return {
            "model": str(Path(self.path).resolve().name),
            "task": self.task.name,
            "runtime": self.runtime,
            "labels": list(labels) if labels else None,
            "problem_type": info.get("problem_type"),
            "fields": self.fields(),
            "max_length": info.get("max_length"),
            "base_model": info.get("base_model"),
        }

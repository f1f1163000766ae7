"""How an embed bundle is checked and run on input records: a sentence vector per text."""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from bertkit.core.errors import BertkitError
from bertkit.core.inference import chunks, empty_record
from bertkit.core.pooling import POOLINGS
from bertkit.core.run_info import RESTORE, RunInfo, shown
from bertkit.tasks.contract import Prediction
from bertkit.tasks.contract.options import PredictOptions
from bertkit.tasks.embed.encoder import bundle_encoder
from bertkit.tasks.embed.pairs import plain_text


class EmbedPrediction(Prediction):
    def check_info(self, root, file, info: dict, complete: bool) -> None:
        """The pooling, when the command reads it from the bundle (`complete`: not when --pooling is
        given), and `normalize`, when present."""
        choices = ", ".join(POOLINGS)
        pooling = info.get("pooling")
        if complete and pooling is None:
            raise BertkitError(
                f"{file} gives no pooling for this embed bundle (no 'pooling' key); restore the file, "
                f"or pass --pooling ({choices})"
            )
        if complete and pooling not in POOLINGS:
            raise BertkitError(f"{file}: 'pooling' must be one of {choices}, not {shown(pooling)}; {RESTORE}")
        if "normalize" in info and not isinstance(info["normalize"], bool):
            raise BertkitError(f"{file}: 'normalize' must be true or false, not {shown(info['normalize'])}; {RESTORE}")

    def empty_result(self, model, record: dict, info: RunInfo, options: PredictOptions) -> dict:
        """An empty text's vector is all zeros (its cosine with anything is 0)."""
        column = options.text_field(info)
        return empty_record(record, column, embedding=[0.0] * int(model.config.hidden_size))

    def predict(
        self, model, tokenizer, info: RunInfo, records: Iterable[dict], options: PredictOptions
    ) -> Iterator[dict]:
        """The sentence vector of each text (for files of vectors, `bertkit embed` is the tool)."""
        encoder = bundle_encoder(model, tokenizer, info)
        column = options.text_field(info)
        for chunk in chunks(records, self.records_per_pass):
            vectors = encoder.encode([plain_text(r.get(column)) for r in chunk], options.batch_size)
            for record, vector in zip(chunk, vectors, strict=True):
                out = {k: record[k] for k in ("id",) if k in record}
                yield {**out, "text": record.get(column), "embedding": [round(float(x), 7) for x in vector]}

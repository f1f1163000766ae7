"""How a masked-LM bundle is run on input records: the top candidates for each [MASK]."""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from bertkit.core.data.records import place_of, text_value
from bertkit.core.errors import BertkitError, RecordError
from bertkit.core.inference import chunks, empty_record, forward
from bertkit.core.run_info import RunInfo
from bertkit.tasks.contract import Prediction, require_field
from bertkit.tasks.contract.options import PredictOptions
from bertkit.tasks.mlm.inputs import completed, described, no_mask, text_at, top_candidates


class MlmPrediction(Prediction):
    records_per_pass = 256

    def check_record(self, record, tokenizer, info: RunInfo, options: PredictOptions, where: str, seen: dict) -> None:
        """A text holding the mask token (a tokenizer without one: `predict` says so itself)."""
        column = options.text_field(info)
        require_field(record, column, where)
        text = text_value(record[column], where, column)
        if tokenizer.mask_token is not None and tokenizer.mask_token not in text:
            raise RecordError(no_mask(where, text, tokenizer.mask_token), column)

    def empty_result(self, model, record: dict, info: RunInfo, options: PredictOptions) -> dict:
        column = options.text_field(info)
        return empty_record(record, column, masks=[], filled=record.get(column))

    def predict(
        self, model, tokenizer, info: RunInfo, records: Iterable[dict], options: PredictOptions
    ) -> Iterator[dict]:
        """Fill-mask: for each [MASK] of each text, the top-k tokens and their probabilities."""
        info = completed(info, model)
        column = options.text_field(info)
        top_k = options.top_k or info.get("top_k", 5)
        mask = tokenizer.mask_token
        if mask is None:
            raise BertkitError("this model's tokenizer has no mask token: it cannot fill in masks")
        number = 0
        for chunk in chunks(records, self.records_per_pass):
            features = []
            for record in chunk:
                number += 1
                text = text_at(record, column, number)
                if mask not in text:
                    raise RecordError(no_mask(place_of(record, number), text, mask), column)
                encoded = tokenizer(text, truncation=True, max_length=info["max_length"])
                if encoded["input_ids"].count(tokenizer.mask_token_id) < text.count(mask):
                    raise BertkitError(
                        f"{place_of(record, number)}: a {mask} lies past the model's {info['max_length']}-token limit; "
                        "shorten the text around it"
                    )
                features.append(dict(encoded))
            results = forward(model, tokenizer, features, options.batch_size, output=top_candidates(tokenizer, top_k))
            for record, found in zip(chunk, results, strict=True):
                yield described(record, column, found, tokenizer)

"""A masked-LM bundle scored on a text file: its perplexity on the same masks every time."""

from __future__ import annotations

from bertkit.core.data.corpus import load_corpus
from bertkit.core.inference import forward
from bertkit.core.run_info import RunInfo
from bertkit.tasks.contract import Evaluation
from bertkit.tasks.contract.options import EvaluateOptions
from bertkit.tasks.mlm.inputs import completed, examples
from bertkit.tasks.mlm.masking import fixed_masks
from bertkit.tasks.mlm.scoring import losses_of_rows, score_rows


class MlmEvaluation(Evaluation):
    def evaluate(self, model, tokenizer, info: RunInfo, data: str, options: EvaluateOptions) -> dict:
        """Perplexity of `model` on a text file, masked the way the bundle was validated."""
        source = options.source(data)
        texts = options.sampled(list(load_corpus(source, options.text_field(info))["text"]))
        info = completed(info, model)
        rows = examples(tokenizer, texts, info, data)
        columns = {key: [row[key] for row in rows] for key in rows[0]}
        masked = fixed_masks(columns, tokenizer, info["mlm_probability"], info["whole_word_masking"], info["seed"])
        features = [dict(zip(masked, values, strict=True)) for values in zip(*masked.values(), strict=True)]
        losses = forward(model, tokenizer, features, options.batch_size, output=losses_of_rows)
        return {**score_rows(losses), "texts": len(texts)}

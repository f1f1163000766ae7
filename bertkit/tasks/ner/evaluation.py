"""An NER bundle scored on a labelled file: each sentence's tags (a `Scored`), on words or, for
character-span data, on characters."""

from __future__ import annotations

from typing import TYPE_CHECKING

from bertkit.core.progress import console
from bertkit.core.run_info import RunInfo
from bertkit.tasks.contract import Evaluation
from bertkit.tasks.contract.options import EvaluateOptions
from bertkit.tasks.ner.character_scores import on_characters
from bertkit.tasks.ner.reading import (
    ner_format,
    normalise_scheme,
    read_examples,
    repair_note,
    require_entities,
    scheme_for,
    words_and_tags,
)
from bertkit.tasks.ner.scored import Tagged
from bertkit.tasks.ner.settings import NerConfig
from bertkit.tasks.ner.tagging import (
    say_unseen,
    score_tags,
    tag_ids,
    tag_sentences,
)

if TYPE_CHECKING:
    pass


class NerEvaluation(Evaluation):
    def data_format(self, source) -> str:

        return ner_format(source)

    def evaluate_examples(self, model, tokenizer, info: RunInfo, data: str, options: EvaluateOptions) -> Tagged:
        """The tags the model gives each sentence of `data`, beside the gold ones."""
        import datasets

        ner = NerConfig.model_validate(info.get("ner") or {})
        source = options.source(data)
        records = options.sampled(read_examples(source, ner, info.get("text_column") or "text", "evaluation"))
        split = datasets.Dataset.from_list(records)
        if "tags" in split.column_names:
            recorded = (info.get("tag_scheme") or {}).get("scheme")
            scheme = scheme_for(split["tags"], ner.scheme, recorded, data)
            split, repaired = normalise_scheme(split, scheme, data)
            if repaired:
                console.print(f"[yellow]warning:[/yellow] {repair_note(data, repaired, scheme)}")
        spans = "entities" in split.column_names  # character spans: scored as the data gives them
        cut = "entities are scored on the characters the data gives, which tags of whole words cannot match"
        words, word_tags = words_and_tags(split, tokenizer, data, *([cut] if spans else []))
        require_entities(word_tags, data)
        tag_ids(word_tags, info, data, split)  # every gold tag must be one the model knows
        # the very tags `predict` writes for this file: same words, same chunks, same batches
        tagged = tag_sentences(model, tokenizer, info, words, options.batch_size)
        unseen = sum(
            tag != "O" and not t.seen[w]
            for t, gold in zip(tagged, word_tags, strict=True)
            for w, tag in enumerate(gold)
        )
        if unseen:
            say_unseen(int(unseen), data)
        if spans:
            return on_characters(split["text"], split["entities"], [t.tags for t in tagged], tokenizer)
        return Tagged([t.tags for t in tagged], word_tags, score_tags)

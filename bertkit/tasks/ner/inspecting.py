"""What `bertkit inspect` looks at in NER data: sentences, entities per type, the tag scheme and the
tags repaired to fit it, sentences long enough to need windows, entities on words that tokenize
to nothing."""

from __future__ import annotations

from bertkit.core import tokenization
from bertkit.core.data import WHERE
from bertkit.tasks.contract.inspection import Inspection, View
from bertkit.tasks.ner import tags
from bertkit.tasks.ner.reading import repaired_tags, words_and_tags
from bertkit.tasks.ner.tagging import tag_ids


def view(split):

    places = list(split[WHERE]) if WHERE in split.column_names else list(split["where"])
    if "tags" in split.column_names:
        texts = [" ".join(tokens) for tokens in split["tokens"]]
        labels = [[kind for kind, _, _ in tags.entities(list(seq))] for seq in split["tags"]]
    else:
        texts = list(split["text"])
        labels = [[e["type"] for e in spans] for spans in split["entities"]]
    return View(texts, labels, None, places)


def checks(ds: dict, tokenizer, info, cfg) -> tuple[dict, list[str]]:

    numbers: dict = {}
    # what reading the data found (`load`, as training reads it), not a second reading of the files
    found = info.get("tag_scheme")
    if found:
        numbers["tag_scheme"] = found["scheme"]
        numbers["tags_repaired"] = found["repaired"].get("train", 0)
    warnings = repaired_tags(info)
    budget = info["max_length"] - tokenization.special_budget(tokenizer)
    windowed = unseen = 0
    for role, split in ds.items():
        words, word_tags = words_and_tags(split, tokenizer, role)
        tag_ids(word_tags, info, role, split)  # a tag the model will not know stops training: it stops inspect too
        for (ids, owners), sentence_tags in zip(
            tokenization.subwords_of_words(tokenizer, words), word_tags, strict=True
        ):
            windowed += len(ids) > budget
            seen = {w for w in owners if w is not None}
            unseen += sum(1 for w, tag in enumerate(sentence_tags) if tag.startswith("B-") and w not in seen)
    numbers["sentences_needing_windows"] = windowed
    numbers["entities_on_words_without_tokens"] = unseen
    if unseen:
        warnings.append(
            f"{unseen} entit(y/ies) start on a word the tokenizer turns into no token at all (the model cannot see it)"
        )
    return numbers, warnings


class NerInspection(Inspection):
    def imbalance_hint(self, cfg) -> str:
        return "ner.class_weights: balanced (per tag) and / or ner.loss: focal"

    def view(self, split, cfg, info) -> View:
        return view(split)

    def checks(self, ds: dict, tokenizer, info, cfg) -> tuple[dict, list[str]]:
        return checks(ds, tokenizer, info, cfg)

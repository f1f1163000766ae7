"""The audit part of NER (`bertkit audit`): a tag per word, flagged by cleanlab's token
classification functions on the out-of-fold probabilities of each word's tags. Entity-span data
is audited on the words the tokenizer cuts its text into, as training reads it."""

from __future__ import annotations

import numpy as np

from bertkit.core.tokenization import load_tokenizer, words_with_offsets
from bertkit.tasks.contract.auditing import N_JOBS, Audit, Examples, Flag, whole_training_data
from bertkit.tasks.ner.reading import words_and_tags
from bertkit.tasks.ner.tagging import entity_spans, tag_sentences


class NerAudit(Audit):
    unit = "word"

    def examples(self, cfg) -> Examples:
        splits = whole_training_data(self.training, cfg)
        train = splits["train"]
        info = self.training.setup(splits, cfg)
        spans = "tags" not in train.column_names
        tokenizer = load_tokenizer(cfg.model.tokenizer or cfg.model.name, cfg.model.revision) if spans else None
        words, word_tags = words_and_tags(train, tokenizer, "train")
        names = list(info["labels"])
        index = {name: i for i, name in enumerate(names)}
        given = [[index[t] for t in seq] for seq in word_tags]
        if spans:  # the text and its spans, as the data gives them
            records = [{"text": t, "entities": list(e)} for t, e in zip(train["text"], train["entities"], strict=True)]
        else:  # the words and their tags, in IOB2 (as training read them)
            records = [{"tokens": w, "tags": t} for w, t in zip(words, word_tags, strict=True)]
        shown = [" ".join(w) for w in words]
        # span data: where each word is in its text, for a fixed file's spans
        offsets = [[(s, e) for _, s, e in words_with_offsets(tokenizer, t)] for t in train["text"]] if spans else None
        info = {**info, "spans": spans, "offsets": offsets}
        return Examples(records, list(train["where"]), shown, given, names, None, words, info=info)

    def fold_settings(self, examples: Examples) -> dict:
        settings = {"data.labels": examples.names, "ner.scheme": "IOB2"}
        # the fold files name their fields as written here
        settings |= {"ner.tokens_field": "tokens", "ner.tags_field": "tags", "ner.entities_field": "entities"}
        if examples.info["spans"]:
            settings |= {"data.text_column": "text", "ner.start_field": "start", "ner.end_field": "end",
                         "ner.type_field": "type", "ner.span_field": None}  # fmt: skip
        return settings

    def probabilities(self, model, tokenizer, info, examples: Examples, indices, batch_size: int) -> list:
        words = [examples.words[i] for i in indices]
        tagged = tag_sentences(model, tokenizer, info, words, batch_size)
        order = {name: j for j, name in enumerate(info["labels"])}
        out = []
        for i, reading in zip(indices, tagged, strict=True):
            probs = np.zeros((len(reading.tags), len(examples.names)))
            for k, name in enumerate(examples.names):
                if name in order:  # a tag no fold example had keeps probability 0
                    probs[:, k] = reading.probs[:, order[name]]
            # a word the model cannot read (no sub-word token) keeps its given tag: nothing to judge
            for w in np.flatnonzero(~reading.seen):
                probs[w] = 0.0
                probs[w, examples.given[i][w]] = 1.0
            out.append(probs / probs.sum(axis=1, keepdims=True).clip(min=1e-12))
        return out

    def issues(self, examples: Examples, probabilities: list) -> list[Flag]:
        from cleanlab.token_classification.filter import find_label_issues
        from cleanlab.token_classification.rank import get_label_quality_scores

        given = [list(g) for g in examples.given]
        found = find_label_issues(given, probabilities, n_jobs=N_JOBS)
        _, word_scores = get_label_quality_scores(given, probabilities)
        names = examples.names
        flags = []
        for i, w in found:
            others = probabilities[i][w].copy()
            others[given[i][w]] = -1.0
            quality = float(np.asarray(word_scores[i])[w])
            flags.append(Flag(int(i), names[given[i][w]], names[int(others.argmax())], quality, int(w)))
        return sorted(flags, key=lambda f: f.quality)

    def fixed(self, record: dict, flags: list[Flag], examples: Examples) -> dict:
        index = flags[0].index
        tags = [examples.names[t] for t in examples.given[index]]
        for flag in flags:
            tags[flag.word] = flag.suggested
        if "tokens" in record:
            return {**record, "tags": tags}
        # entity spans again, from where the words are in the text
        offsets = examples.info["offsets"][index]
        found = entity_spans(record["text"], offsets, tags)
        return {**record, "entities": [{"type": kind, "start": s, "end": e} for kind, _, _, s, e in found]}

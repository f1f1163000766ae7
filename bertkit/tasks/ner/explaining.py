"""`bertkit explain` on a NER model: each predicted entity (of the type --target names, or all),
scored by the sum over its words of the logit of the tag the model chose for the word, at the
word's first sub-word (the one predict reads). The text is read as NER predict reads it: the
pre-tokenizer's words, each cut into sub-words."""

from __future__ import annotations

from bertkit.core import tokenization
from bertkit.core.errors import BertkitError
from bertkit.tasks.contract.explaining import Explainer, Plan, Target, model_output
from bertkit.tasks.explain_inputs import Encoded, Word, check_length
from bertkit.tasks.ner import tags
from bertkit.tasks.ner.tagging import tag_words

SCORE_KIND = "sum of the logits of the predicted tag at each word of the entity"


def encode_words(tokenizer, text: str, limit: int | None) -> Encoded:
    found = tokenization.words_with_offsets(tokenizer, text)
    ((ids, owners),) = tokenization.subwords_of_words(tokenizer, [[w for w, _, _ in found]])
    feature = tokenization.wrap(tokenizer, ids)
    check_length(len(feature["input_ids"]), limit)
    first = tokenization.prefix_length(tokenizer)
    words = [Word(w, s, e, 0, []) for w, s, e in found]
    for position, owner in enumerate(owners):
        words[owner].positions.append(first + position)
    return Encoded(feature, tokenizer.convert_ids_to_tokens(feature["input_ids"]), words, [text], ["text"])


class NerExplainer(Explainer):
    def encode(self, tokenizer, text, pair, question, info):
        return info, encode_words(tokenizer, text, info.get("max_length"))

    def plan(self, model, info, encoded, target) -> Plan:

        logits = model_output(model, encoded).logits[0].float().cpu().numpy()
        labels = list(info["labels"])
        kinds = sorted({name[2:] for name in labels if name[:2] in ("B-", "I-")})
        if target is not None and target not in kinds:
            raise BertkitError(
                f"--target {target}: not an entity type of this model; its types are {', '.join(kinds) or 'none'}"
            )
        word_index = [-1] * len(logits)
        for w, word in enumerate(encoded.words):
            if word.positions:
                word_index[word.positions[0]] = w
        columns = {"example": [0], "word_index": [word_index], "word_count": [len(encoded.words)]}
        (tagged,) = tag_words(columns, [logits], labels)
        text = encoded.texts[0]
        targets = []
        for kind, first, last in tags.entities(tagged.tags):
            if target is not None and kind != target:
                continue
            read = [w for w in range(first, last) if tagged.seen[w]]
            start, end = encoded.words[first].start, encoded.words[last - 1].end
            terms = []
            for w in read:
                position = encoded.words[w].positions[0]
                terms.append(("logits", position, int(logits[position].argmax())))
            extra = {
                "label": kind,
                "text": text[start:end],
                "start": start,
                "end": end,
                "tokens": [p for w in range(first, last) for p in encoded.words[w].positions],
                "probability": round(float(tagged.probs[read].max(-1).mean()), 6) if read else None,
            }
            targets.append(Target(f"{kind}: {text[start:end]}", terms, extra))
        return Plan(targets, SCORE_KIND, {"tags": tagged.tags})

    def lay_out(self, explained: list[dict]) -> dict:
        return {"entities": [{k: v for k, v in e.items() if k != "target"} for e in explained]}

    def headline(self, result: dict) -> str:
        count = len(result["entities"])
        if not count:
            return "no entities found: nothing to explain"
        return f"{count} entit{'y' if count == 1 else 'ies'} found"

    def shown(self, result: dict) -> list[dict]:
        return [{**e, "target": f"{e['label']}: {e['text']}"} for e in result["entities"]]


EXPLAINER = NerExplainer()

"""What is explained for each task, as scores read from the model's output (`Target`):

- classify: the target label's logit (single- and multi-label), or the predicted value (regression);
- ner: each predicted entity, scored by the sum over its words of the logit of the tag the model
  chose for the word (at the word's first sub-word, the one predict reads);
- qa: the answer's start logit (at its first token) and end logit (at its last token).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from bertkit.errors import BertkitError
from bertkit.explain.attribution import Target
from bertkit.explain.inputs import Encoded
from bertkit.inference import sigmoid, softmax

SCORE_KINDS = {
    "classify": "logit",
    "regression": "value",
    "ner": "sum of the logits of the predicted tag at each word of the entity",
    "qa": "logit",
}


@dataclass
class Plan:
    targets: list[Target]
    score_kind: str
    summary: dict = field(default_factory=dict)  # the model's prediction, as JSON fields


def _output(model, encoded: Encoded):
    import torch

    with torch.no_grad():
        return model(**encoded.tensors(model.device))


def label_index(value: str, labels: list[str], option: str = "--target") -> int:
    """A label given by name or by number."""
    if value in labels:
        return labels.index(value)
    if value.strip().lstrip("-").isdigit() and 0 <= int(value) < len(labels):
        return int(value)
    raise BertkitError(
        f"{option} {value}: not a label of this model; its labels are {', '.join(labels)} "
        f"(or their numbers, 0 to {len(labels) - 1})"
    )


def classify_plan(model, info: dict, encoded: Encoded, target: str | None) -> Plan:
    logits = _output(model, encoded).logits[0].float().cpu().numpy()
    problem = info.get("problem_type", "single_label")
    if problem == "regression":
        if target is not None:
            raise BertkitError(f"--target {target}: a regression model has one output, its value; leave --target out")
        value = round(float(logits[0]), 6)
        return Plan([Target("score", [("logits", None, 0)])], SCORE_KINDS["regression"], {"predicted": value})
    labels = list(info.get("labels") or []) or [f"LABEL_{i}" for i in range(len(logits))]
    probs = sigmoid(logits) if problem == "multi_label" else softmax(logits[None])[0]
    index = int(probs.argmax()) if target is None else label_index(target, labels)
    if problem == "multi_label":
        threshold = info.get("threshold", 0.5)
        predicted = [labels[i] for i in np.flatnonzero(probs > threshold)]
    else:
        predicted = labels[int(probs.argmax())]
    chosen = Target(
        labels[index], [("logits", None, index)], {"target_index": index, "probability": round(float(probs[index]), 6)}
    )
    summary = {
        "predicted": predicted,
        "probabilities": {n: round(float(p), 6) for n, p in zip(labels, probs, strict=True)},
    }
    return Plan([chosen], SCORE_KINDS["classify"], summary)


def ner_plan(model, info: dict, encoded: Encoded, target: str | None) -> Plan:
    from bertkit.tasks.ner import tags
    from bertkit.tasks.ner.tagging import tag_words

    logits = _output(model, encoded).logits[0].float().cpu().numpy()
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
    return Plan(targets, SCORE_KINDS["ner"], {"tags": tagged.tags})


def qa_plan(model, info: dict, encoded: Encoded, target: str | None) -> Plan:
    from bertkit.tasks.qa.answers import NO_CONTEXT, answer_tokens, extract_answers, feature_columns

    if target is not None:
        raise BertkitError(f"--target {target}: a QA model explains its answer's start and end; leave --target out")
    output = _output(model, encoded)
    rows = np.stack([output.start_logits[0].float().cpu().numpy(), output.end_logits[0].float().cpu().numpy()], -1)
    window = encoded.window
    (answer,) = extract_answers(feature_columns([window]), [rows], encoded.texts[1:], info["qa"], info["version_2"])
    summary = {k: answer[k] for k in ("answer", "start", "end")}
    summary["probability"] = answer["score"]
    inside = [k for k, o in enumerate(window["offset_mapping"]) if tuple(o) != NO_CONTEXT]
    found = None
    if answer["start"] is not None:
        offsets = [tuple(window["offset_mapping"][k]) for k in inside]
        found = answer_tokens(offsets, encoded.texts[1], answer["start"], answer["answer"])
    first, last = (inside[found[0]], inside[found[1]]) if found else (window["cls_index"],) * 2
    targets = [
        Target("answer start", [("start_logits", first, None)], {"token": first}),
        Target("answer end", [("end_logits", last, None)], {"token": last}),
    ]
    return Plan(targets, SCORE_KINDS["qa"], summary)


PLANS = {"classify": classify_plan, "ner": ner_plan, "qa": qa_plan}

"""`bertkit explain` on a QA model: the answer's start logit (at its first token) and end logit (at
its last token), for a question (--question) about a context (the text), read as QA predict reads
them in one window (a context that needs several is refused)."""

from __future__ import annotations

import numpy as np

from bertkit.core import tokenization
from bertkit.core.errors import BertkitError
from bertkit.tasks.contract.explaining import Explainer, Plan, Target, model_output
from bertkit.tasks.explain_inputs import Encoded, words_in
from bertkit.tasks.qa.answers import NO_CONTEXT, answer_tokens, encode, extract_answers, feature_columns
from bertkit.tasks.qa.reading import complete_settings


def encode_question(tokenizer, question: str, context: str, info: dict) -> Encoded:
    features = encode(tokenizer, [question], [context], info)
    if len(features) > 1:
        length = len(tokenization.tokens_with_offsets(tokenizer, [context])[0][0])
        raise BertkitError(
            f"the context is {length} tokens long and does not fit with the question into one input of this "
            f"model ({info['max_length']} tokens): give a shorter context (the part that holds the answer)"
        )
    feature = features[0]
    offsets = feature["offset_mapping"]
    inside = [k for k, o in enumerate(offsets) if tuple(o) != NO_CONTEXT]
    asked = tokenization.tokens_with_offsets(tokenizer, [question])[0][1][: info["qa"]["max_question_length"]]
    words = words_in(tokenizer, question, 0, asked, tokenization.prefix_length(tokenizer))
    words += words_in(tokenizer, context, 1, [tuple(offsets[k]) for k in inside], inside[0] if inside else 0)
    model_feature = {k: feature[k] for k in ("input_ids", "attention_mask", "token_type_ids") if k in feature}
    tokens = tokenizer.convert_ids_to_tokens(feature["input_ids"])
    return Encoded(model_feature, tokens, words, [question, context], ["question", "context"], feature)


class QaExplainer(Explainer):
    reads_questions = True

    def check(self, text, pair, question, info, plain) -> None:
        if not (question or "").strip():
            raise BertkitError(
                "--question is missing: a QA model explains its answer to a question about --text (the context)"
            )

    def encode(self, tokenizer, text, pair, question, info):
        info = complete_settings(info)
        return info, encode_question(tokenizer, question, text, info)

    def plan(self, model, info, encoded, target) -> Plan:
        if target is not None:
            raise BertkitError(f"--target {target}: a QA model explains its answer's start and end; leave --target out")
        output = model_output(model, encoded)
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
        return Plan(targets, "logit", summary)

    def lay_out(self, explained: list[dict]) -> dict:
        return {"explanations": {"start": explained[0], "end": explained[1]}}

    def headline(self, result: dict) -> str:
        if result["start"] is None:
            return f"no answer (probability {result['probability']:.3f})"
        where = f"characters {result['start']}-{result['end']}"
        return f"answer: {result['answer']!r} ({where}, probability {result['probability']:.3f})"


EXPLAINER = QaExplainer()

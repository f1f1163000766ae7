"""Scoring NER on character-span data (a text and its entities' start and end) against the spans
as the data gives them. The model tags whole words, so a gold span that cuts through a word
("Tokyo" in "Tokyo-based", a name inside a run of kana) is labelled as the whole word for
training; scored on those widened words, a model that tags the whole word came out perfect (F1
1.0) though none of its entities had the gold offsets. Here both sides become one IOB2 tag per
character (gold: the data's spans; predicted: the spans predict writes, tagging.entity_spans), and
the same metric scores them: an entity is right when its type and both ends match exactly.
`token_accuracy` becomes `character_accuracy`, the share of characters tagged right."""

from __future__ import annotations

from bertkit.core import graphemes, tokenization
from bertkit.tasks.ner.scored import Tagged
from bertkit.tasks.ner.tagging import entity_spans, score_tags


def character_tags(length: int, spans) -> list[str]:
    """IOB2 tags of a text's `length` characters for entity `spans` (type, start, end)."""
    out = ["O"] * length
    for kind, start, end in spans:
        for i in range(start, end):
            out[i] = f"{'B' if i == start else 'I'}-{kind}"
    return out


def on_characters(texts: list[str], gold: list[list[dict]], predicted: list[list[str]], tokenizer) -> Tagged:
    """Predicted word tags (one list per text, the words of `tokenization.words_with_offsets`)
    against the gold spans of each text ({type, start, end}, snapped to whole clusters without
    white space at their edges, as predicted spans are), both as character tags."""
    predicted_chars, gold_chars = [], []
    for text, spans, word_tags in zip(texts, gold, predicted, strict=True):
        offsets = [(start, end) for _, start, end in tokenization.words_with_offsets(tokenizer, text)]
        if len(word_tags) != len(offsets):
            raise RuntimeError(f"{text[:40]!r}: {len(word_tags)} predicted tags for {len(offsets)} words")
        found = [(kind, start, end) for kind, _, _, start, end in entity_spans(text, offsets, word_tags)]
        clusters = graphemes.Graphemes(text)
        true = [(span["type"], *clusters.snap(span["start"], span["end"])) for span in spans]
        predicted_chars.append(character_tags(len(text), found))
        gold_chars.append(character_tags(len(text), true))
    return Tagged(predicted_chars, gold_chars, score_characters)


def score_characters(predicted: list[list[str]], gold: list[list[str]]) -> dict:
    scores = score_tags(predicted, gold)
    scores["character_accuracy"] = scores.pop("token_accuracy")
    return scores

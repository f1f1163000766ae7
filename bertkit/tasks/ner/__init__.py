"""Named-entity recognition: CoNLL columns, token/tag JSON, character-span data, raw text.

Every input becomes words with IOB2 tags (and, when there is a text, the words' character
offsets, found by the tokenizer's own pre-tokenizer). Sentences longer than the model's limit are
cut into overlapping sub-word windows; each word is labelled and predicted in exactly one window
(the one where it sits most centrally), so nothing is dropped and nothing is counted twice.

Every word keeps its own place whatever its tokenization: `tag_words` turns model rows into one
tag per word of each sentence, and a word with no sub-word token at all (a lone soft hyphen,
zero-width space, U+FFFD, NUL, combining mark) gets O without moving any other word's tag (see
`tags.iob2_over_seen`). Training's scores, `bertkit evaluate` and `bertkit predict` all read
their tags from it, and score them against the gold tag of every word.
"""

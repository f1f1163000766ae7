"""Extractive question answering: SQuAD v1.1 / v2.0 JSON, flat JSON lines, the hub's squad(_v2).

Question and context go in together. A context longer than the room the model leaves it is cut
into overlapping windows (`qa.doc_stride` tokens shared), so a context of any length is read
whole. Training points start and end at the answer's tokens, or at [CLS] when a window does not
hold the answer or the question has none. Prediction takes the `n_best` starts and ends of every
window, keeps the best valid pair, maps it back to the context's characters, and for SQuAD v2
answers nothing when the null score beats it by more than `qa.null_score_diff_threshold`.

Characters and tokens: a gold answer is the run of tokens that overlap it (white space at its
edges left out), so marks the tokenizer drops (an accent, a soft hyphen) never pull in a
neighbouring token; a predicted answer is widened to whole grapheme clusters, so it never ends
inside a character (the accent after the last letter of an NFD "José" is part of it).
"""

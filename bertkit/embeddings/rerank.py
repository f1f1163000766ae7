"""`bertkit search --rerank M`: the bi-encoder's top candidates of each query re-scored by a
cross-encoder (a `bertkit train rerank` bundle, or a plain one-output sequence-classification
model such as a sentence-transformers CrossEncoder) and re-ordered by its score.

Kept apart from the search itself: it takes the search's records (whatever found the hits,
exact or from an index) and returns them re-ordered, one record per query, in query order."""

from __future__ import annotations

from collections.abc import Iterable, Iterator

import numpy as np

from bertkit.core.errors import BertkitError
from bertkit.core.inference import chunks
from bertkit.tasks.bundle import open_bundle
from bertkit.tasks.rerank.scoring import pair_scores

QUERIES_PER_PASS = 32  # queries whose candidates are scored together: full batches, bounded memory


class Reranker:
    """A cross-encoder checked at construction (before any model loads) and loaded on first use."""

    def __init__(self, path: str, top: int, batch_size: int, device=None, trust_remote_code=False, runtime=None):

        if top < 1:
            raise BertkitError(f"--rerank-top {top}: give 1 or more candidates to re-score")
        self.bundle = open_bundle(path, trust_remote_code, runtime)
        info = self.bundle.info
        plain_scorer = info["task"] == "classify" and info.get("problem_type") == "regression"
        if info["task"] != "rerank" and not plain_scorer:
            raise BertkitError(
                f"--rerank {path}: a {info['task']} model, not a cross-encoder. Give a `bertkit train rerank` "
                "bundle, or a sequence-classification model with one output (a CrossEncoder)"
            )
        self.path, self.top, self.batch_size, self.device = path, top, batch_size, device
        self.model = self.tokenizer = None

    def depth(self, top_k: int) -> int:
        """How many candidates the search must find for `top_k` hits after re-ranking."""
        return max(top_k, self.top)

    def scores(self, queries: list[str], passages: list[str]) -> np.ndarray:

        if self.model is None:
            self.tokenizer = self.bundle.load_tokenizer()
            self.model = self.bundle.load_model("AutoModelForSequenceClassification", self.device)
        length = self.bundle.info.get("max_length", 512)
        return pair_scores(self.model, self.tokenizer, queries, passages, length, self.batch_size)

    def apply(self, records: Iterable[dict], top_k: int) -> Iterator[dict]:
        """Each search record with its first `self.top` hits re-ordered by the cross-encoder's
        score (the rest after them, as the search ordered them), cut to `top_k`. A hit keeps its
        `index`, `score` (the bi-encoder's) and `text`, and gains `rerank_score` and `bi_rank`
        (its 1-based place in the search's order)."""
        for chunk in chunks(records, QUERIES_PER_PASS):
            pairs = [(r["query"], hit["text"]) for r in chunk for hit in r["hits"][: self.top]]
            scores = iter(self.scores([q for q, _ in pairs], [p for _, p in pairs]))
            for record in chunk:
                yield {**record, "hits": reorder(record["hits"], self.top, scores, top_k)}


def reorder(hits: list[dict], top: int, scores: Iterator, top_k: int) -> list[dict]:
    """`hits` with the first `top` sorted by the next scores (stable: a tie keeps the search's
    order), the others after them unscored."""
    ranked = [{**hit, "bi_rank": place + 1} for place, hit in enumerate(hits)]
    head = [{**hit, "rerank_score": round(float(next(scores)), 6)} for hit in ranked[:top]]
    head.sort(key=lambda hit: -hit["rerank_score"])
    tail = [{**hit, "rerank_score": None} for hit in ranked[top:]]
    return (head + tail)[:top_k]

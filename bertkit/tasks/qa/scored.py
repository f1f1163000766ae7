"""A reader's per-question results (`bertkit.tasks.contract.scored.Scored`): its answer to each question
beside the gold answers. Exact match and F1 are means over questions (0-100, as the squad
metric reports them), so a resample is scored from each question's own two numbers, computed
by the squad metric's own functions."""

from __future__ import annotations

import numpy as np

from bertkit.core.metrics.squad import exact_chars, exact_words, f1_chars, f1_words, normalize_answer
from bertkit.tasks.contract.scored import Scored, subset
from bertkit.tasks.qa.answers import _f1_unit, score_answers


class Answered(Scored):
    metrics = ("exact_match", "f1")
    paired = "exact_match"

    def __init__(self, found: list[dict], records: list[dict], info: dict):
        self.found, self.records, self.info = found, records, info
        # the unit of F1 is the whole file's, whatever subset is scored
        self.unit = _f1_unit(info["qa"].get("f1_unit", "auto"), [r["context"] for r in records])

    def __len__(self) -> int:
        return len(self.records)

    def references(self) -> list:
        return [(r["id"], list(r["answers"]["text"])) for r in self.records]

    def score(self, indices=None) -> dict:
        if indices is None:
            return score_answers(self.found, self.records, self.info, self.unit)
        # a resample repeats questions: each drawn copy gets an id of its own
        records = [{**r, "id": f"{n}:{r['id']}"} for n, r in enumerate(subset(self.records, indices))]
        return score_answers(subset(self.found, indices), records, self.info, self.unit)

    def _each(self) -> np.ndarray:

        exact, f1 = (exact_chars, f1_chars) if self.unit == "char" else (exact_words, f1_words)
        rows = []
        for record, answer in zip(self.records, self.found, strict=True):
            golds = [t for t in record["answers"]["text"] if normalize_answer(t)] or [""]
            rows.append((max(exact(g, answer["answer"]) for g in golds), max(f1(g, answer["answer"]) for g in golds)))
        return np.asarray(rows, dtype=float).reshape(-1, 2)

    def correct(self) -> np.ndarray:
        return self._each()[:, 0].astype(int)

    def stats(self) -> np.ndarray:
        """Per question: 1 (it counts), its exact match (0 or 1) and its F1 (0 to 1)."""
        each = self._each()
        return np.hstack([np.ones((len(each), 1)), each])

    def from_sums(self, sums: np.ndarray) -> dict[str, np.ndarray]:
        total, exact, f1 = np.asarray(sums, dtype=float).T
        return {"exact_match": 100.0 * exact / total, "f1": 100.0 * f1 / total}

"""What an audit writes: `label_issues.jsonl` (the flagged labels, most suspect first, each with
its file and line), `summary.json` (counts per given / suggested pair, the estimated share of wrong
labels), a plot of that confusion, the held-out probabilities themselves
(`held_out_probabilities.npz`), and with `--write-fixed` `fixed.jsonl` (every example, its flagged
labels replaced by the suggested ones; the user's file is never written)."""

from __future__ import annotations

import json
import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from bertkit.core import plots
from bertkit.core.outputs import json_line, write_json
from bertkit.tasks.contract.auditing import Audit, Examples, Flag

ISSUES, SUMMARY, PLOT, FIXED = "label_issues.jsonl", "summary.json", "label_issues.png", "fixed.jsonl"
HELD_OUT = "held_out_probabilities.npz"
_PLACE = (
    (re.compile(r"^(?P<file>.*), (?P<kind>record|row) (?P<number>\d+)$"), None),
    (re.compile(r"^(?P<file>.*):(?P<number>\d+)$"), "line"),
)


def located(place: str) -> dict:
    """`{"file", "line"}` from a place `path:12` (`record` or `row` for a JSON array's record or a
    Parquet row, where a line says nothing)."""
    for pattern, kind in _PLACE:
        found = pattern.match(place)
        if found:
            return {"file": found["file"], kind or found["kind"]: int(found["number"])}
    return {"file": place}


def _shown(label) -> str:
    return " + ".join(label) if isinstance(label, list) else str(label)


@dataclass
class Report:
    audit: Audit
    examples: Examples
    flags: list[Flag]
    probabilities: list
    folds: int
    folder: Path | None = None
    summary: dict = field(default_factory=dict)

    def __post_init__(self):
        self.summary = self._summary()

    def records(self) -> list[dict]:
        out = []
        for rank, flag in enumerate(self.flags, start=1):
            place, text = self.examples.places[flag.index], self.examples.shown[flag.index]
            record = {"rank": rank, **located(place), "text": text}
            if flag.word is not None:
                record |= {"word": self.examples.words[flag.index][flag.word], "word_number": flag.word + 1}
            record |= {"given": flag.given, "suggested": flag.suggested, "quality": round(flag.quality, 6)}
            out.append(record)
        return out

    def _summary(self) -> dict:
        ex = self.examples
        units = sum(len(g) for g in ex.given) if self.audit.unit == "word" else len(ex.given)
        pairs = Counter((_shown(f.given), _shown(f.suggested)) for f in self.flags)
        summary = {
            "task": ex.info.get("task"),
            "examples": len(ex.given),
            **({"words": units} if self.audit.unit == "word" else {}),
            "folds": self.folds,
            "flagged": len(self.flags),
            "flagged_share": round(len(self.flags) / max(units, 1), 6),
            "estimated_error_share": self._estimated_share(units),
            "out_of_fold_accuracy": self._accuracy(),
            "pairs": [{"given": g, "suggested": s, "count": n} for (g, s), n in pairs.most_common()],
            "labels": ex.names,
        }
        if ex.info.get("strategy"):
            summary["route"] = ex.info["strategy"]
        return summary

    def _estimated_share(self, units: int) -> float:
        """cleanlab's estimate of the share of wrong labels (single-label: from the confident
        joint, which counts beyond the flags it is sure of; otherwise the flagged share)."""
        ex = self.examples
        if self.audit.unit == "example" and not isinstance(ex.given[0], list):
            from cleanlab.count import num_label_issues

            count = num_label_issues(np.asarray(ex.given, dtype=int), np.stack(self.probabilities))
            return round(float(count) / max(units, 1), 6)
        return round(len(self.flags) / max(units, 1), 6)

    def _accuracy(self) -> float:
        """How often the held-out model's likeliest label is the given one (a word's tag for NER)."""
        right = total = 0
        for given, probs in zip(self.examples.given, self.probabilities, strict=True):
            probs = np.asarray(probs)
            if isinstance(given, list) and self.audit.unit == "word":
                right += int((probs.argmax(axis=1) == np.asarray(given)).sum())
                total += len(given)
            elif isinstance(given, list):  # multi-label: the whole set right
                threshold = self.examples.info.get("threshold") or 0.5
                right += set(np.flatnonzero(probs > threshold).tolist()) == set(given)
                total += 1
            else:
                right += int(probs.argmax() == given)
                total += 1
        return round(right / max(total, 1), 6)

    def write(self, folder: Path, fixed: bool) -> None:
        with (folder / ISSUES).open("w", encoding="utf-8") as out:
            for record in self.records():
                out.write(json_line(record) + "\n")
        write_json(folder / SUMMARY, self.summary)
        self._write_probabilities(folder / HELD_OUT)
        self._plot(folder / PLOT)
        if fixed:
            self._write_fixed(folder / FIXED)

    def _write_probabilities(self, path: Path) -> None:
        """`probabilities`: a row per example (NER: per word, the sentences one after the other,
        `starts` where each begins), columns in the order of summary.json's `labels`."""
        rows = [np.atleast_2d(p) for p in self.probabilities]
        starts = np.cumsum([0] + [len(r) for r in rows[:-1]])
        with path.open("wb") as out:
            np.savez_compressed(out, probabilities=np.concatenate(rows).astype(np.float32), starts=starts)

    def _plot(self, path: Path) -> None:
        pairs = self.summary["pairs"]
        if not pairs:
            return
        if any(isinstance(f.given, list) for f in self.flags):  # multi-label: labels taken away and added
            removed = Counter(x for f in self.flags for x in set(f.given) - set(f.suggested))
            added = Counter(x for f in self.flags for x in set(f.suggested) - set(f.given))
            plots.label_bars({"given, not suggested": dict(removed), "suggested, not given": dict(added)}, path,
                             title="Flagged labels")  # fmt: skip
            return
        names = [n for n in self.examples.names if any(n in (p["given"], p["suggested"]) for p in pairs)]
        matrix = np.zeros((len(names), len(names)), dtype=int)
        for p in pairs:
            matrix[names.index(p["given"]), names.index(p["suggested"])] += p["count"]
        plots.confusion_matrix(matrix.tolist(), names, path, axes=("given", "suggested"), title="Flagged labels")

    def _write_fixed(self, path: Path) -> None:
        by_example: dict[int, list[Flag]] = {}
        for flag in self.flags:
            by_example.setdefault(flag.index, []).append(flag)
        with path.open("w", encoding="utf-8") as out:
            for index, record in enumerate(self.examples.records):
                if index in by_example:
                    record = self.audit.fixed(record, by_example[index], self.examples)
                out.write(json.dumps(record, ensure_ascii=False) + "\n")

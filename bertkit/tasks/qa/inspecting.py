"""What `bertkit inspect` looks at in QA data: answerable and unanswerable questions, the windows
each context is cut into, and answers that fall outside every window."""

from __future__ import annotations

from collections import Counter

from bertkit.core.data import WHERE
from bertkit.tasks.contract.inspection import Inspection, View
from bertkit.tasks.qa.answers import encode


def view(split):

    places = list(split[WHERE]) if WHERE in split.column_names else list(split["where"])
    labels = [["answerable" if answers["text"] else "unanswerable"] for answers in split["answers"]]
    return View(list(split["question"]), labels, list(split["context"]), places)


def checks(ds: dict, tokenizer, info, cfg) -> tuple[dict, list[str]]:

    numbers: dict = {}
    warnings: list[str] = []
    for role, split in ds.items():
        rows = split.to_list()
        features = encode(
            tokenizer, [r["question"] for r in rows], [r["context"] for r in rows], info, [r["answers"] for r in rows]
        )
        windows = Counter(f["example"] for f in features)
        found = {f["example"] for f in features if f["start_positions"] != f["cls_index"]}
        answerable = [k for k, r in enumerate(rows) if r["answers"]["text"]]
        outside = [k for k in answerable if k not in found]
        numbers[role] = {
            "questions": len(rows),
            "unanswerable_share": round(1 - len(answerable) / len(rows), 4) if rows else 0.0,
            "windows_per_question": round(sum(windows.values()) / max(len(rows), 1), 2),
            "most_windows": max(windows.values(), default=0),
            "answers_outside_every_window": len(outside),
        }
        if outside:
            warnings.append(
                f"{role}: {len(outside)} answer(s) lie in no window the model reads (first: "
                f"{rows[outside[0]].get('where') or rows[outside[0]]['id']}); they train as unanswerable. Raise "
                "model.max_length or qa.doc_stride"
            )
    return numbers, warnings


class QaInspection(Inspection):
    def view(self, split, cfg, info) -> View:
        return view(split)

    def checks(self, ds: dict, tokenizer, info, cfg) -> tuple[dict, list[str]]:
        return checks(ds, tokenizer, info, cfg)

"""`bertkit inspect`: look at a run's data before training, the way spaCy's `debug data` does.

The splits are read by the task's own readers (so what would stop training stops here too), the
task's `setup` is run on them (labels, entities, answers), and the texts are measured with the
tokenizer alone: no model weights are loaded. The report is a dict with stable keys (documented
in docs/inspect.md); `verdict` is "ok", "warnings" or "errors", and only errors stop training.
"""

from __future__ import annotations

from bertkit.core import models
from bertkit.core.errors import BertkitError
from bertkit.core.run_info import RunInfo
from bertkit.core.tokenization import load_tokenizer
from bertkit.inspection import texts as text_checks
from bertkit.inspection import tokens as token_checks
from bertkit.tasks import get_task

ORDER = ("train", "validation", "test")
# what deserves a look (thresholds of the warnings)
DUPLICATE_SHARE = 0.01
IMBALANCE = 10.0
TRUNCATED_SHARE = 0.05
UNKNOWN_RATE = 0.01


def inspect_run(cfg) -> dict:
    """The report on `cfg`'s data (see the module's docs)."""

    task = get_task(cfg.task)
    report: dict = {
        "task": cfg.task,
        "model": cfg.model.tokenizer or cfg.model.name,
        "max_length": cfg.model.max_length,
        "validation_from_train": cfg.data.validation is None,
        "splits": {},
        "overlap": {},
        "overlap_normalised": {},
        "labels": {},
        "warnings": [],
        "errors": [],
    }
    try:
        ds = task.training.load(cfg)
        info = task.training.setup(ds, cfg)
    except BertkitError as err:
        report["errors"].append(str(err))
        return _verdict(report)

    info = RunInfo(info)
    views = {role: task.inspection.view(ds[role], cfg, info) for role in ORDER if role in ds}
    _splits(report, views)
    _labels(report, views, cfg)
    if task.training.starts_from_scratch(cfg):
        report["warnings"].append("the tokenizer is learnt from the data when training starts: token counts skipped")
    else:
        damaged = models.damaged_weights(cfg.model.name)  # weights are not loaded, but one cut short stops training
        if damaged:
            report["errors"].append(damaged)
        tokenizer = _tokenizer(cfg, report)
        if tokenizer is not None:
            _tokens(report, views, tokenizer, cfg)
            try:
                checks, warnings = task.inspection.checks(ds, tokenizer, info, cfg)
            except BertkitError as err:  # what `prepare` would refuse (a label training never saw)
                report["errors"].append(str(err))
            else:
                report["checks"] = checks
                report["warnings"] += warnings
    return _verdict(report)


def _tokenizer(cfg, report: dict):

    try:
        return load_tokenizer(cfg.model.tokenizer or cfg.model.name, cfg.model.revision, cfg.model.trust_remote_code)
    except BertkitError as err:
        report["errors"].append(str(err))
        return None


def _splits(report: dict, views: dict) -> None:
    for role, view in views.items():
        numbers = text_checks.split_numbers(view)
        report["splits"][role] = numbers
        if numbers["empty"]:
            where = f" (first: {numbers['empty_examples'][0]})" if numbers["empty_examples"] else ""
            report["warnings"].append(f"{role}: {numbers['empty']} example(s) with an empty text{where}")
        if numbers["duplicates"] > DUPLICATE_SHARE * numbers["examples"]:
            report["warnings"].append(
                f"{role}: {numbers['duplicates']} duplicate example(s) "
                f"({numbers['duplicates'] / numbers['examples']:.1%}), e.g. {numbers['duplicate_examples'][0]!r}"
            )
    roles = list(views)
    for i, first in enumerate(roles):
        for second in roles[i + 1 :]:
            key = f"{first}__{second}"
            found = text_checks.overlap(views[first], views[second])
            report["overlap"][key] = found["exact"]
            report["overlap_normalised"][key] = found["normalised"]
            if found["exact"]:
                example = found["examples"][0]
                report["warnings"].append(
                    f"{found['exact']} {second} example(s) also occur in {first} (leakage), e.g. {example!r}"
                )


def _labels(report: dict, views: dict, cfg) -> None:
    if any(view.labels is None for view in views.values()):
        return
    for role, view in views.items():
        report["labels"][role] = text_checks.label_counts(view)
    train = report["labels"].get("train", {})
    ratio = text_checks.imbalance(train)
    report["label_imbalance"] = ratio
    if ratio and ratio >= IMBALANCE:
        rare = min(train, key=train.get)
        report["warnings"].append(
            f"train: labels are imbalanced {ratio}:1 (rarest: '{rare}', {train[rare]} example(s)); consider "
            + get_task(cfg.task).inspection.imbalance_hint(cfg)
        )
    report["unseen_labels"] = {}
    for role in ("validation", "test"):
        unseen = sorted(set(report["labels"].get(role, {})) - set(train))
        if unseen:
            report["unseen_labels"][role] = unseen
            report["warnings"].append(f"{role}: label(s) never seen in train: {', '.join(unseen)}")
    noise = text_checks.conflicting_labels(views["train"])
    report["label_noise"] = noise
    if noise["texts"]:
        report["warnings"].append(
            f"train: {noise['texts']} text(s) carry different labels, e.g. {noise['examples'][0]}"
        )


def _tokens(report: dict, views: dict, tokenizer, cfg) -> None:
    max_length = cfg.model.max_length
    ids_by_split = {role: token_checks.token_ids(tokenizer, view.texts, view.pairs) for role, view in views.items()}
    every = [row for ids in ids_by_split.values() for row in ids]
    length = token_checks.length_numbers(every, max_length)
    length["by_split"] = {role: token_checks.length_numbers(ids, max_length) for role, ids in ids_by_split.items()}
    report["_lengths"] = {role: [len(row) for row in ids] for role, ids in ids_by_split.items()}  # for plots only
    said = get_task(cfg.task).inspection.truncation_warning(
        length["over_max_length_share"], length["tokens"]["max"], max_length
    )
    if said is not None:  # a task that cuts long texts (the others read them in windows)
        length["truncated_share"] = length["over_max_length_share"]
        if length["truncated_share"] > TRUNCATED_SHARE:
            report["warnings"].append(said)
    report["length"] = length
    every_text = [t for view in views.values() for t in view.texts + (view.pairs or [])]
    unknown = token_checks.unknown_numbers(tokenizer, every_text, every)
    report["tokens"] = unknown
    if unknown["unknown_rate"] > UNKNOWN_RATE:
        shown = " ".join(c["character"] for c in unknown["unknown_characters"][:5])
        report["warnings"].append(
            f"{unknown['unknown_rate']:.1%} of the tokens are unknown to the tokenizer (most often: {shown})"
        )


def _verdict(report: dict) -> dict:
    report["verdict"] = "errors" if report["errors"] else "warnings" if report["warnings"] else "ok"
    return report

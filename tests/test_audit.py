"""bertkit audit (bertkit/auditing, the tasks' `Audit` parts): folds, cleanlab's flags on
probabilities whose right answers are known, the report and its places, the refusals; and (slow)
whole audits on the tiny model with labels flipped where the test knows, `--resume` after a fold,
and NER's tags."""

from __future__ import annotations

import csv
import json
import random
import shutil

import numpy as np
import pytest
from helpers.tiny import write_easy_csv

from bertkit.auditing import folds, report
from bertkit.core.errors import BertkitError
from bertkit.tasks import get_task
from bertkit.tasks.contract import Examples

NAMES = ["negative", "neutral", "positive"]


def _classes(n: int, flipped: set[int], seed: int = 0):
    """`n` examples of three classes, the model sure of the true class; `flipped` given another."""
    rng = np.random.default_rng(seed)
    truth = [i % 3 for i in range(n)]
    given = [(t + 1) % 3 if i in flipped else t for i, t in enumerate(truth)]
    probs = []
    for t in truth:
        p = rng.dirichlet([1, 1, 1]) * 0.15
        p[t] += 0.85
        probs.append(p / p.sum())
    records = [{"text": f"text {i}", "label": NAMES[g]} for i, g in enumerate(given)]
    places = [f"data/train.csv:{i + 2}" for i in range(n)]
    info = {"task": "classify", "problem_type": "single_label", "label_column": "label", "strategy": "finetune"}
    shown, strata = [r["text"] for r in records], [NAMES[g] for g in given]
    examples = Examples(records, places, shown, given, NAMES, strata, info=info)
    return examples, probs, truth


def test_cleanlab_flags_the_flipped_labels_and_suggests_the_true_ones():
    flipped = {3, 17, 40, 41, 88, 120, 150}
    examples, probs, truth = _classes(180, flipped)
    flags = get_task("classify").audit.issues(examples, probs)
    assert {f.index for f in flags} == flipped
    assert all(f.suggested == NAMES[truth[f.index]] and f.given != f.suggested for f in flags)
    assert [f.quality for f in flags] == sorted(f.quality for f in flags)  # most suspect first
    assert all(0.0 <= f.quality <= 1.0 for f in flags)


def test_cleanlab_runs_in_this_process(monkeypatch):
    """A pool's forked workers inherit the command's signal handlers: at the pool's end one raised
    bertkit's Interrupted and printed a traceback after a finished audit."""
    import multiprocessing.pool

    def no_pool(*args, **kwargs):
        raise AssertionError("cleanlab started a process pool")

    monkeypatch.setattr(multiprocessing.pool.Pool, "__init__", no_pool)
    examples, probs, _ = _classes(3000, set(range(0, 3000, 37)))
    assert get_task("classify").audit.issues(examples, probs)


def test_multi_label_flags_a_missing_and_an_extra_label():
    rng = np.random.default_rng(1)
    n, names = 120, ["a", "b", "c"]
    truth = [sorted({i % 3, (i * 7) % 3}) for i in range(n)]
    given = [list(t) for t in truth]
    given[5] = [x for x in range(3) if x not in truth[5]][:1] or [0]  # a wrong set
    given[60] = sorted(set(truth[60]) | {x for x in range(3) if x not in truth[60]})  # every label
    probs = [np.clip(np.isin(np.arange(3), t) * 0.9 + rng.uniform(0.02, 0.08, 3), 0, 1) for t in truth]
    info = {"task": "classify", "problem_type": "multi_label", "threshold": 0.5, "label_column": "labels",
            "label_separator": "|"}
    records = [{"text": f"t{i}", "labels": "|".join(names[j] for j in g)} for i, g in enumerate(given)]
    examples = Examples(records, [f"f.csv:{i + 2}" for i in range(n)], ["t"] * n, given, names, None, info=info)
    flags = get_task("classify").audit.issues(examples, probs)
    assert {f.index for f in flags} >= {5, 60}
    flag = next(f for f in flags if f.index == 5)
    assert flag.suggested == [names[j] for j in truth[5]]
    fixed = get_task("classify").audit.fixed(records[5], [flag], examples)
    assert fixed == {"text": "t5", "labels": "|".join(names[j] for j in truth[5])}  # the file's own form


def test_ner_flags_the_words_whose_tags_were_changed():
    names = ["O", "B-LOC", "I-LOC", "B-PER", "I-PER"]
    rng = np.random.default_rng(2)
    truth, words = [], []
    for i in range(150):
        seq = [0] * 6
        seq[i % 5] = 3 if i % 2 else 1
        if i % 3 == 0:
            seq[i % 5 + 1] = 4 if i % 2 else 2
        truth.append(seq)
        words.append([f"w{i}_{k}" for k in range(6)])
    given = [list(s) for s in truth]
    changed = {(i, i % 5) for i in range(7, 150, 12)}  # a person given as a place, or the other way
    for i, w in changed:
        given[i][w] = 1 if truth[i][w] == 3 else 3
    given[30][5] = 3  # and an O given as a person
    changed.add((30, 5))
    probs = []
    for seq in truth:
        p = rng.uniform(0.0, 0.02, (6, 5))
        p[np.arange(6), seq] += 0.95
        probs.append(p / p.sum(axis=1, keepdims=True))
    records = [{"tokens": w, "tags": [names[t] for t in g]} for w, g in zip(words, given, strict=True)]
    info = {"task": "ner", "spans": False}
    examples = Examples(records, [f"train.conll:{4 * i + 1}" for i in range(150)], [" ".join(w) for w in words],
                        given, names, None, words, info=info)  # fmt: skip
    audit = get_task("ner").audit
    flags = audit.issues(examples, probs)
    found = {(f.index, f.word) for f in flags}
    # confident learning is sure of most, never of a right tag (its thresholds are each tag's own)
    assert found <= changed and len(found) >= 0.6 * len(changed), (sorted(found), sorted(changed))
    for flag in flags:
        i, w = flag.index, flag.word
        assert flag.given == names[given[i][w]] and flag.suggested == names[truth[i][w]]
        fixed = audit.fixed(records[i], [flag], examples)
        assert fixed["tags"] == [names[t] for t in given[i][:w]] + [names[truth[i][w]]] + [
            names[t] for t in given[i][w + 1 :]
        ]
    result = report.Report(audit, examples, flags, probs, 2)
    rows = result.records()
    assert rows[0]["file"] == "train.conll" and rows[0]["line"] == 4 * flags[0].index + 1
    assert rows[0]["word"] == words[flags[0].index][flags[0].word] and rows[0]["word_number"] == flags[0].word + 1
    assert result.summary["words"] == 900 and result.summary["flagged"] == len(found)


def test_the_report_names_file_and_line_and_writes_every_file(tmp_path):
    flipped = {4, 50, 51, 77}
    examples, probs, truth = _classes(90, flipped)
    audit = get_task("classify").audit
    flags = audit.issues(examples, probs)
    result = report.Report(audit, examples, flags, probs, 3)
    result.write(tmp_path, fixed=True)
    lines = [json.loads(x) for x in (tmp_path / report.ISSUES).read_text().splitlines()]
    assert [r["line"] for r in lines] == [f.index + 2 for f in flags]  # the places given: line 2 is example 0
    assert {r["line"] - 2 for r in lines} <= flipped and len(lines) >= 2
    assert all(r["file"] == "data/train.csv" and r["text"] == f"text {r['line'] - 2}" for r in lines)
    assert set(lines[0]) >= {"rank", "file", "line", "text", "given", "suggested", "quality"}
    summary = json.loads((tmp_path / report.SUMMARY).read_text())
    assert summary["flagged"] == len(flags) and summary["examples"] == 90 and summary["folds"] == 3
    assert sum(p["count"] for p in summary["pairs"]) == len(flags) and 0 < summary["estimated_error_share"] < 0.1
    assert (tmp_path / report.PLOT).stat().st_size > 1000
    held = np.load(tmp_path / report.HELD_OUT)
    assert np.allclose(held["probabilities"], np.stack(probs), atol=1e-6) and held["starts"].tolist() == list(range(90))
    fixed = [json.loads(x) for x in (tmp_path / report.FIXED).read_text().splitlines()]
    expected = [truth[i] if i in {f.index for f in flags} else examples.given[i] for i in range(90)]
    assert [NAMES.index(r["label"]) for r in fixed] == expected and len(fixed) == 90


@pytest.mark.parametrize(
    ("place", "found"),
    [("a/b.csv:12", {"file": "a/b.csv", "line": 12}), ("x.json, record 3", {"file": "x.json", "record": 3}),
     ("d.parquet, row 9", {"file": "d.parquet", "row": 9}), ("C:/data/t.csv:4", {"file": "C:/data/t.csv", "line": 4}),
     ("imdb (hub), row 2", {"file": "imdb (hub)", "row": 2})],
)  # fmt: skip
def test_places_read_back_into_file_and_line(place, found):
    assert report.located(place) == found


def test_folds_hold_every_class_and_refuse_more_folds_than_a_class_has():
    examples, _, _ = _classes(60, set())
    assigned = folds.assign(examples, 5, seed=3)
    for fold in range(5):
        held = [examples.strata[i] for i, f in enumerate(assigned) if f == fold]
        assert sorted(set(held)) == sorted(NAMES) and len(held) == 12
    assert folds.assign(examples, 5, seed=3) == assigned  # the seed decides
    examples.strata[:] = ["rare"] * 3 + examples.strata[3:]
    with pytest.raises(BertkitError, match=r"'rare' has 3 training example\(s\), fewer than --folds 5.*--folds to 3"):
        folds.assign(examples, 5, seed=3)
    with pytest.raises(BertkitError, match="more than the 60 training examples"):
        folds.assign(examples, 61, seed=3)


def test_resume_with_other_settings_is_refused_naming_them(tmp_path):
    plan = {"folds": 5, "seed": 42, "examples": "abc"}
    folds.check_plan(tmp_path, plan, resume=False)
    folds.check_plan(tmp_path, plan, resume=True)
    with pytest.raises(BertkitError, match=r"folds: 5 → 3.*--overwrite"):
        folds.check_plan(tmp_path, {**plan, "folds": 3}, resume=True)
    with pytest.raises(BertkitError, match="the training examples or the config"):
        folds.check_plan(tmp_path, {**plan, "examples": "def"}, resume=True)


def _config(tmp_path, tiny_model, train, task="classify", extra=""):
    """A config that trains the tiny model on `train` (`extra`: more data.* lines)."""
    path = tmp_path / "audit.yaml"
    path.write_text(
        f"task: {task}\nmodel:\n  name: {tiny_model}\n  max_length: 32\ndata:\n  train: {train}\n{extra}"
        "train:\n  epochs: 8\n  batch_size: 16\n  learning_rate: 3.0e-3\n  warmup_ratio: 0.0\n  seed: 7\n"
        f"output_dir: {tmp_path / 'run'}\n"
    )
    return path


def test_a_task_without_labels_to_audit_is_refused(cli, tmp_path, tiny_model, easy_data):
    config = _config(tmp_path, tiny_model, easy_data["train"], task="embed")
    code, _, err = cli("audit", "-c", config)
    assert code == 2 and "classify and ner" in err and "the embed task" in err
    assert "Traceback" not in err and not (tmp_path / "run-audit").exists()


def test_without_cleanlab_the_message_names_the_install(cli, tmp_path, tiny_model, easy_data, monkeypatch):
    import builtins

    real = builtins.__import__

    def no_cleanlab(name, *args, **kwargs):
        if name == "cleanlab" or name.startswith("cleanlab."):
            raise ImportError(name)
        return real(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_cleanlab)
    code, _, err = cli("audit", "-c", _config(tmp_path, tiny_model, easy_data["train"]))
    assert code == 2 and "cleanlab" in err and "pip install" in err and "[audit]" in err


# ---------------------------------------------------------------- whole audits (slow)


def _flipped_copy(source, target, share: float, seed: int) -> set[int]:
    """`source` (text,label CSV) written to `target` with `share` of the labels flipped; returns
    the flipped examples' line numbers."""
    rows = list(csv.reader(source.open(encoding="utf-8")))
    rng = random.Random(seed)
    flipped = set(rng.sample(range(1, len(rows)), round(share * (len(rows) - 1))))
    with target.open("w", newline="", encoding="utf-8") as out:
        writer = csv.writer(out)
        for i, row in enumerate(rows):
            if i in flipped:
                row = [row[0], "negative" if row[1] == "positive" else "positive"]
            writer.writerow(row)
    return {i + 1 for i in flipped}


@pytest.mark.slow
def test_an_audit_finds_flipped_labels_by_line_and_resumes_after_a_fold(cli, tmp_path, tiny_model, monkeypatch):
    train = tmp_path / "train.csv"
    flipped = _flipped_copy(write_easy_csv(tmp_path / "clean.csv", 420, seed=9), train, 0.05, seed=5)
    before = train.read_bytes()
    config = _config(tmp_path, tiny_model, train)
    import bertkit.auditing.run as run

    real, calls = run._run_fold, []

    def stopped_in_the_second(*args, **kwargs):
        calls.append(args[5])
        if len(calls) == 2:
            raise KeyboardInterrupt
        return real(*args, **kwargs)

    monkeypatch.setattr(run, "_run_fold", stopped_in_the_second)
    code, _, err = cli("audit", "-c", config, "-k", "3")
    assert code != 0 and not (tmp_path / "run-audit").exists()
    code, _, err = cli("audit", "-c", config, "-k", "3")  # no --resume: the folds are not silently dropped
    assert code == 2 and "--resume" in err
    monkeypatch.setattr(run, "_run_fold", real)
    code, out, err = cli("audit", "-c", config, "-k", "3", "--resume", "--write-fixed")
    assert code == 0, err
    assert "fold 1 of 3: done before" in err and "the audit ends in about" in err
    folder = tmp_path / "run-audit"
    issues = [json.loads(x) for x in (folder / "label_issues.jsonl").read_text().splitlines()]
    found = {r["line"] for r in issues}
    assert len(found & flipped) >= 0.6 * len(flipped), (sorted(found), sorted(flipped))
    assert len(found & flipped) >= 0.7 * len(found), (sorted(found), sorted(flipped))
    lines = train.read_text().splitlines()
    for record in issues:  # each place is the line of that example in the user's file
        assert lines[record["line"] - 1].startswith(record["text"]) and record["file"] == str(train)
    assert train.read_bytes() == before  # the user's file is never written
    fixed = [json.loads(x) for x in (folder / "fixed.jsonl").read_text().splitlines()]
    assert len(fixed) == len(lines) - 1
    summary = json.loads((folder / "summary.json").read_text())
    assert summary["examples"] == 420 and summary["route"] == "finetune" and summary["folds"] == 3
    assert "flagged" in out and not (tmp_path / "run-audit.partial").exists()


@pytest.mark.slow
def test_an_ner_audit_flags_the_changed_tags(cli, tmp_path, tiny_model, ner_data):
    source = ner_data["train"].read_text().split("\n\n")
    changed = set()
    for number in range(3, len(source), 29):  # a person's tag written as a place's
        if "B-PER" in source[number]:
            source[number] = source[number].replace("B-PER", "B-LOC", 1)
            changed.add(number)
    train = tmp_path / "train.conll"
    train.write_text("\n\n".join(source))
    config = _config(tmp_path, tiny_model, train, task="ner", extra="")
    config.write_text(config.read_text().replace("epochs: 8", "epochs: 4"))
    code, out, err = cli("audit", "-c", config, "-k", "2")
    assert code == 0, err
    issues = [json.loads(x) for x in (tmp_path / "run-audit" / "label_issues.jsonl").read_text().splitlines()]
    assert issues and {"word", "word_number", "line", "given", "suggested"} <= set(issues[0])
    hits = [r for r in issues if r["given"] == "B-LOC" and r["suggested"] in ("B-PER", "O")]
    assert hits, issues[:5]
    shutil.rmtree(tmp_path / "run-audit")
    # entity spans: audited on the tokenizer's words; the fixed file gives spans again, on those words
    config.write_text(config.read_text().replace(str(train), str(ner_data["spans"])))
    code, out, err = cli("audit", "-c", config, "-k", "2", "--write-fixed")
    assert code == 0, err
    fixed = [json.loads(x) for x in (tmp_path / "run-audit" / "fixed.jsonl").read_text().splitlines()]
    source = [json.loads(x) for x in ner_data["spans"].read_text().splitlines()]
    assert [r["text"] for r in fixed] == [r["text"] for r in source]
    for record in fixed:
        for span in record["entities"]:
            piece = record["text"][span["start"] : span["end"]]
            assert piece == piece.strip() and piece and span["type"] in ("PER", "LOC")
    issues = [json.loads(x) for x in (tmp_path / "run-audit" / "label_issues.jsonl").read_text().splitlines()]
    assert all(r["file"] == str(ner_data["spans"]) and "record" in r for r in issues)


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["multi_label", "pairs"])
def test_multi_label_and_pair_data_are_audited_on_their_own_columns(cli, tmp_path, tiny_model, kind):
    rows = list(csv.reader(write_easy_csv(tmp_path / "easy.csv", 120, seed=4).open(encoding="utf-8")))[1:]
    data = tmp_path / "train.csv"
    with data.open("w", newline="", encoding="utf-8") as out:
        writer = csv.writer(out)
        if kind == "multi_label":
            writer.writerow(["text", "tags"])
            for text, label in rows:
                writer.writerow([text, label + ("|long" if len(text.split()) > 8 else "")])
            extra = "  label_column: tags\n  label_separator: '|'\n"
        else:
            writer.writerow(["premise", "hypothesis", "label"])
            for i, (text, label) in enumerate(rows):
                writer.writerow([text, rows[(i + 1) % len(rows)][0], label])
            extra = "  text_column: premise\n  text_pair_column: hypothesis\n"
    config = _config(tmp_path, tiny_model, data, extra=extra)
    config.write_text(config.read_text().replace("epochs: 8", "epochs: 2"))
    code, out, err = cli("audit", "-c", config, "-k", "2", "--write-fixed")
    assert code == 0, err
    folder = tmp_path / "run-audit"
    summary = json.loads((folder / "summary.json").read_text())
    fixed = [json.loads(x) for x in (folder / "fixed.jsonl").read_text().splitlines()]
    assert summary["examples"] == 120 and len(fixed) == 120
    if kind == "multi_label":
        assert set(summary["labels"]) == {"long", "negative", "positive"}
        assert all(set(r) == {"text", "tags"} for r in fixed)
        for record in (json.loads(x) for x in (folder / "label_issues.jsonl").read_text().splitlines()):
            assert isinstance(record["given"], list) and isinstance(record["suggested"], list)
    else:
        assert all(set(r) == {"premise", "hypothesis", "label"} for r in fixed)
        for record in (json.loads(x) for x in (folder / "label_issues.jsonl").read_text().splitlines()):
            assert " ⟶ " in record["text"]

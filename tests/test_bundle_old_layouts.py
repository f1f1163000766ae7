"""Bundles written before the task contract and the new layout still load and run.

tests/fixtures/bundles-0.1.0 holds one small bundle per task, written by bertkit 0.1.0 as it
was at commit c444c50 (tests/fixtures/make_bundles.py, run from that checkout). Each is opened,
read, and run on a few inputs through today's CLI."""

import json
import shutil
from pathlib import Path

import pytest

OLD = Path(__file__).parent / "fixtures" / "bundles-0.1.0"
TASKS = ["classify", "ner", "qa", "mlm-adapt", "embed"]


@pytest.fixture
def old_bundle(tmp_path):
    def copy(task: str) -> Path:
        return Path(shutil.copytree(OLD / task, tmp_path / task))

    return copy


def test_every_task_has_an_old_bundle():
    assert sorted(p.name for p in OLD.iterdir() if p.is_dir()) == sorted(TASKS)
    for task in TASKS:
        info = json.loads((OLD / task / "bertkit.json").read_text())
        assert info["task"] == task and info["bertkit_version"] == "0.1.0"


@pytest.mark.parametrize("task", TASKS)
def test_an_old_bundle_opens_with_its_description(task, old_bundle):
    from bertkit.core.run_info import RunInfo
    from bertkit.tasks.bundle import open_bundle

    bundle = open_bundle(str(old_bundle(task)))
    assert isinstance(bundle.info, RunInfo) and bundle.info.task == task and bundle.info.max_length == 48


INPUTS = {
    "classify": ("texts.txt", "a great film\n\nan awful meal\n"),
    "ner": ("texts.txt", "paris is big\n\nhello there\n"),
    "qa": ("q.jsonl", '{"question": "who?", "context": "alpha met bravo in paris"}\n'),
    "mlm-adapt": ("texts.txt", "the [MASK] was great\n\nthe [MASK] film\n"),
    "embed": ("texts.txt", "about alpha bravo\n\nthe film\n"),
}


@pytest.mark.parametrize("task", TASKS)
def test_predict_runs_an_old_bundle(task, cli, old_bundle, tmp_path):
    name, text = INPUTS[task]
    source = tmp_path / name
    source.write_text(text, encoding="utf-8")
    code, _, err = cli("predict", "-m", old_bundle(task), "-i", source, "-o", tmp_path / "out.jsonl")
    assert code == 0, err
    rows = [json.loads(line) for line in (tmp_path / "out.jsonl").read_text().splitlines()]
    assert len(rows) == len(text.splitlines())  # one result a line, blank lines included
    if task == "classify":
        assert rows[0]["label"] in ("positive", "negative") and rows[1]["empty"] is True
    if task == "ner":
        assert isinstance(rows[0]["entities"], list) and rows[1]["empty"] is True
    if task == "qa":
        assert isinstance(rows[0]["answer"], str) and rows[0]["answer"] in "alpha met bravo in paris"
    if task == "mlm-adapt":
        assert len(rows[0]["masks"]) == 1 and len(rows[0]["masks"][0]["candidates"]) == 5
    if task == "embed":
        assert len(rows[0]["embedding"]) == 16 and rows[1]["empty"] is True


def test_evaluate_scores_an_old_classify_bundle(cli, old_bundle, tmp_path):
    data = tmp_path / "dev.csv"
    data.write_text("text,label\na great film,positive\nan awful meal,negative\n", encoding="utf-8")
    code, _, err = cli("evaluate", "-m", old_bundle("classify"), "-d", data, "-o", tmp_path / "eval")
    assert code == 0, err
    metrics = json.loads((tmp_path / "eval" / "metrics.json").read_text())
    assert 0.0 <= metrics["accuracy"] <= 1.0

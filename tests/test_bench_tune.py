"""bench/tune_quality.py's SQuAD study: the questions it optimises are none of those it trains on,
the dev set is only its test, and a stopped bench's trials count towards the total."""

from __future__ import annotations

import argparse
import importlib
import json
import sys

import yaml
from conftest import ROOT, shared


def _bench(monkeypatch, tmp_path, data=None):
    monkeypatch.syspath_prepend(str(ROOT / "bench"))
    sys.modules.pop("tune_quality", None)
    module = importlib.import_module("tune_quality")
    monkeypatch.setattr(module, "WORK", tmp_path)
    if data is not None:
        monkeypatch.setattr(module, "DATA", data)
    return module


def test_squad_study_is_tuned_on_held_out_articles(monkeypatch, tmp_path):
    squad = shared("en", "squad", "train-v1.1.json")
    bench = _bench(monkeypatch, tmp_path, squad.parents[2])
    cfg = yaml.safe_load(open(bench.squad_config(argparse.Namespace(validation=500))))
    trained = [q["id"] for a in json.loads(squad.read_text())["data"] for p in a["paragraphs"] for q in p["qas"]][:2000]
    held = json.loads(open(cfg["data"]["validation"]).read())
    held_ids = [q["id"] for a in held["data"] for p in a["paragraphs"] for q in p["qas"]]
    assert len(held_ids) >= 500
    assert not set(held_ids) & set(trained)
    assert cfg["data"]["test"].endswith("dev-v1.1.json") and cfg["data"]["train"] == str(squad)
    assert "data.max_train_samples=2000" in bench.SQUAD_SETS and "data.sample=first" in bench.SQUAD_SETS


def test_finished_trials_count_what_ended(monkeypatch, tmp_path):
    bench = _bench(monkeypatch, tmp_path)
    assert bench._finished_trials(tmp_path) == 0
    states = ["complete", "pruned", "fail", "running", "waiting", "complete"]
    (tmp_path / "trials.json").write_text(json.dumps({"trials": [{"state": s} for s in states]}))
    assert bench._finished_trials(tmp_path) == 4

"""`train.learning_rate: auto`: the task's measured rate, raised for short runs."""

import json
import math

import pytest
from helpers.checks import assert_refused, write_config

from bertkit.config import load_config
from bertkit.core.learning_rates import StepScaledRate, planned_steps
from bertkit.tasks import registry
from bertkit.training.budget import resolve_rates


def test_the_rule_raises_short_runs_only_and_at_most_max_factor():
    rule = StepScaledRate(base=5e-5, reference_steps=1000, max_factor=4.0)
    assert rule.factor(1000) == rule.factor(5000) == 1.0  # long runs: the measured base as it is
    assert rule.factor(250) == pytest.approx(2.0)
    assert rule.factor(63) == pytest.approx(math.sqrt(1000 / 63))
    assert rule.factor(19) == rule.factor(1) == 4.0
    assert "1,000 steps" in rule.describe()


@pytest.mark.parametrize(
    "examples, batch, accumulation, epochs, max_steps, processes, expected",
    [
        (1000, 16, 1, 1, None, 1, 63),  # the last batch is short, and counts
        (1000, 16, 1, 3, None, 1, 189),
        (1000, 16, 2, 1, None, 1, 31),  # the Trainer drops a last incomplete accumulation
        (1000, 16, 1, 1, None, 2, 32),  # two processes share the batches
        (1000, 16, 1, 0.5, None, 1, 32),
        (10, 16, 4, 1, None, 1, 1),
        (1000, 16, 1, 3, 7, 1, 7),  # max_steps wins
    ],
)
def test_planned_steps_count_as_the_trainer_does(examples, batch, accumulation, epochs, max_steps, processes, expected):
    assert planned_steps(examples, batch, accumulation, epochs, max_steps, processes) == expected


def load(tmp_path, text: str):
    path = tmp_path / "run.yaml"
    path.write_text(text + "data:\n  train: a.csv\n")
    return load_config(path)


def test_auto_becomes_a_number_from_the_run_length(tmp_path):
    cfg = load(tmp_path, "task: classify\ntrain:\n  epochs: 1\n")
    short, note = resolve_rates(cfg, range(1000))  # 63 steps
    assert short.train.learning_rate == pytest.approx(5e-5 * math.sqrt(1000 / 63), rel=1e-2)
    assert note == {
        "auto": ["learning_rate"],
        "steps": 63,
        "factor": round(math.sqrt(1000 / 63), 3),
        "learning_rate": short.train.learning_rate,
    }
    # 19 steps: still the √ law (3.6e-4), under the 8x cap; the old 4x cap (2e-4) left SST-2 at chance
    shorter, _ = resolve_rates(cfg, range(300))
    assert shorter.train.learning_rate == pytest.approx(5e-5 * math.sqrt(1000 / 19), rel=1e-2)
    long, _ = resolve_rates(cfg, range(40_000))
    assert long.train.learning_rate == 5e-5
    assert cfg.train.learning_rate == "auto"  # the loaded config is left as it was


def test_a_number_is_kept_as_written(tmp_path):
    cfg = load(tmp_path, "task: classify\ntrain:\n  learning_rate: 1.0e-5\n")
    same, note = resolve_rates(cfg, range(100))
    assert same is cfg and note == {}


def test_auto_where_a_task_has_no_rule_is_refused(tmp_path):
    with pytest.raises(Exception, match="no measured rule"):
        load(tmp_path, "task: embed\ntrain:\n  learning_rate: auto\n")
    with pytest.raises(Exception, match="head_learning_rate: auto"):
        load(tmp_path, "task: classify\ntrain:\n  head_learning_rate: auto\n")


def test_the_cli_names_the_key_when_auto_has_no_rule(tmp_path, cli):
    path = tmp_path / "run.yaml"
    path.write_text("task: embed\ndata:\n  train: a.csv\ntrain:\n  learning_rate: auto\n")
    code, _, err = cli("config", "show", "-c", str(path))
    assert_refused(code, err, "learning_rate", "no measured rule")


def test_every_rule_is_complete():
    for record in registry.records():
        rule = record.learning_rate
        if rule is not None:
            assert rule.base > 0 and rule.reference_steps >= 1 and rule.max_factor >= 1
            assert record.defaults.get(("train", "learning_rate")) == "auto"


@pytest.mark.slow
def test_a_short_run_trains_at_the_raised_rate_and_the_bundle_says_so(tiny_model, easy_data, tmp_path, cli):
    out = tmp_path / "model"
    path = write_config(
        tmp_path, tiny_model, easy_data["train"], out, "train:\n  max_steps: 4\n  eval_strategy: 'no'\n"
    )
    code, _, err = cli("train", "classify", "-c", str(path))
    assert code == 0, err
    info = json.loads((out / "bertkit.json").read_text())
    assert info["config"]["train"]["learning_rate"] == 4e-4  # 5e-5 x 8 (4 steps: the most it is raised)
    assert info["training"]["learning_rate"] == {
        "auto": ["learning_rate"],
        "steps": 4,
        "factor": 8.0,
        "learning_rate": 4e-4,
    }
    assert "×8 for a 4-step run" in " ".join(err.split())

"""The task contract holds: a task defined here, in this file alone (its settings, its parts and one
registry record), trains, evaluates and predicts through the CLI. Nothing else in bertkit is
edited for it, which is what docs/architecture.md promises for "adding a task". And a part that
lacks a required method cannot be made: the task fails when it is defined, naming the method."""

import json
import random

import numpy as np
import pytest
from pydantic import Field

from bertkit.config import Section
from bertkit.tasks import registry
from bertkit.tasks.contract import Evaluation, Prediction, Task, Training

# ---------------------------------------------------------------- the toy task: count the words


class CountSettings(Section):
    scale: float = Field(10.0, gt=0, description="counts are divided by this for training")


def counts(model, tokenizer, info, texts):
    import torch

    batch = tokenizer(texts, truncation=True, max_length=info["max_length"], padding=True, return_tensors="pt")
    with torch.no_grad():
        return (model(**batch).logits.reshape(-1) * info["scale"]).tolist()


class CountTraining(Training):
    """Regression of a text's word count, on the model's pooled output."""

    def load(self, cfg):
        import datasets

        from bertkit.core.data.corpus import read_lines

        rows = [{"text": t, "label": float(len(t.split()))} for t in read_lines(cfg.data.train.path) if t.strip()]
        cut = len(rows) * 4 // 5
        return {"train": datasets.Dataset.from_list(rows[:cut]), "validation": datasets.Dataset.from_list(rows[cut:])}

    def setup(self, ds, cfg):
        return {"task": "count-words", "max_length": cfg.model.max_length, "scale": cfg.section(CountSettings).scale}

    def prepare(self, ds, tokenizer, info):
        def encode(batch):
            out = tokenizer(batch["text"], truncation=True, max_length=info["max_length"])
            out["labels"] = [v / info["scale"] for v in batch["label"]]
            return out

        return {role: split.map(encode, batched=True, remove_columns=split.column_names) for role, split in ds.items()}

    def build_model(self, source, info, cfg):
        from transformers import AutoModelForSequenceClassification

        return AutoModelForSequenceClassification.from_pretrained(source, num_labels=1, problem_type="regression")

    def metric_names(self, info):
        return ["mae"]

    def best_metric(self, info):
        return "mae"

    def metric_fn(self, info, features, examples):
        def compute(prediction):
            guessed = np.asarray(prediction.predictions).reshape(-1) * info["scale"]
            return {"mae": float(np.mean(np.abs(guessed - np.asarray(prediction.label_ids) * info["scale"])))}

        return compute


class CountEvaluation(Evaluation):
    def evaluate(self, model, tokenizer, info, data, options):
        from bertkit.core.data.corpus import read_lines

        texts = [t for t in read_lines(data) if t.strip()]
        found = counts(model, tokenizer, info, texts)
        return {"mae": float(np.mean([abs(c - len(t.split())) for c, t in zip(found, texts, strict=True)]))}


class CountPrediction(Prediction):
    def predict(self, model, tokenizer, info, records, options):
        records = list(records)
        column = options.text_field(info)  # typed options: the --text-column, else the model's, else "text"
        found = counts(model, tokenizer, info, [r[column] for r in records])
        for record, count in zip(records, found, strict=True):
            yield {"text": record["text"], "count": round(count, 2)}

    def empty_result(self, model, record, info, options):
        return {"text": "", "count": None, "empty": True}


TASK = Task(
    name="count-words",
    auto_model="AutoModelForSequenceClassification",
    training=CountTraining(),
    prediction=CountPrediction(),
    evaluation=CountEvaluation(),
)


@pytest.fixture
def count_task():
    registry.register(
        registry.TaskRecord(
            name="count-words",
            module=__name__,
            summary="Count the words of a text (a toy task defined in a test).",
            section="count",
            settings=CountSettings,
            defaults={("train", "learning_rate"): 3e-3},
        )
    )
    yield
    registry.unregister("count-words")


# ---------------------------------------------------------------- the test


@pytest.mark.slow
def test_a_task_defined_outside_bertkit_trains_evaluates_and_predicts(cli, tmp_path, tiny_model, count_task):
    rng = random.Random(0)
    words = "the a film story actor scene plot music ending cast".split()
    lines = [" ".join(rng.choice(words) for _ in range(rng.randint(1, 12))) for _ in range(300)]
    data = tmp_path / "texts.txt"
    data.write_text("\n".join(lines) + "\n")
    config = tmp_path / "count.yaml"
    config.write_text(
        f"task: count-words\nmodel:\n  name: {tiny_model}\n  max_length: 32\ndata:\n  train: {data}\n"
        "train:\n  epochs: 8\n  batch_size: 16\ncount:\n  scale: 10\n"
        f"output_dir: {tmp_path / 'model'}\n"
    )
    # its config section is known, its measured default applies, a typo in it is caught
    code, out, err = cli("config", "show", "-c", config)
    assert code == 0, err
    shown = __import__("yaml").safe_load(out)
    assert shown["count"] == {"scale": 10.0} and shown["train"]["learning_rate"] == 3e-3
    code, _, err = cli("train", "count-words", "-c", config, "--set", "count.scael=3")
    assert code == 2 and "did you mean 'scale'" in err
    code, _, err = cli("train", "count-words", "-c", config)
    assert code == 0, err
    info = json.loads((tmp_path / "model" / "bertkit.json").read_text())
    # it learnt: guessing the mean count (1 to 12 words, evenly) is off by 3 on average
    assert info["task"] == "count-words" and info["metrics"]["validation"]["mae"] < 1.5
    assert "count-words" in (tmp_path / "model" / "README.md").read_text()

    held_out = tmp_path / "held_out.txt"
    held_out.write_text("the film\n\na story the actor the plot of the music and the cast\n")
    code, _, err = cli("evaluate", "-m", tmp_path / "model", "-d", held_out, "-o", tmp_path / "scores")
    assert code == 0, err
    assert json.loads((tmp_path / "scores" / "metrics.json").read_text())["mae"] < 3

    code, out, err = cli("predict", "-m", tmp_path / "model", "-i", held_out)
    assert code == 0, err
    results = [json.loads(line) for line in out.splitlines()]
    assert [r.get("empty", False) for r in results] == [False, True, False]  # the blank line keeps its place
    assert results[0]["count"] < results[2]["count"]  # 2 words against 12


# ---------------------------------------------------------------- an incomplete part fails at once


def test_a_part_missing_a_required_method_cannot_be_made_and_names_it():
    class NoPredict(Prediction):
        def empty_result(self, model, record, info, options):
            return {}

    with pytest.raises(TypeError, match="predict"):
        NoPredict()

    class Half(Training):
        def load(self, cfg):
            return {}

    with pytest.raises(TypeError, match="build_model"):
        Half()


def test_an_evaluation_that_scores_nothing_cannot_be_defined():
    with pytest.raises(TypeError, match="evaluate_examples"):

        class Nothing(Evaluation):
            pass


def test_a_task_refuses_a_part_of_the_wrong_kind():
    with pytest.raises(TypeError, match="prediction must be a Prediction"):
        Task(name="x", auto_model="AutoModel", training=CountTraining(), prediction=object(), evaluation=None)


def test_every_registered_task_is_whole():
    """Each built-in task imports (its parts made, so every required method is there) and has the
    parts a task of its kind needs: training always; prediction and evaluation unless its bundles
    are another task's (distill)."""
    for name in registry.names():
        task = registry.get_task(name)
        assert task.name == name and isinstance(task.training, Training)
        if name != "distill":
            assert isinstance(task.prediction, Prediction) and isinstance(task.evaluation, Evaluation), name

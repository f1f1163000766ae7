"""`bertkit train distill` end to end on tiny models built in the test: a teacher trained on an
easy set, a 1-layer student distilled from it, and the student's bundle used as any other."""

import csv
import json
import random

import pytest
from helpers.tiny import sentence

pytestmark = pytest.mark.slow


def write(path, text):
    path.write_text(text)
    return path


def train(cli, kind, config):
    code, out, err = cli("train", kind, "-c", config)
    assert code == 0, out + err
    return out


@pytest.fixture(scope="module")
def teacher(learned_classify_bundle):
    """A classify teacher trained 6 epochs on the easy set (tests/conftest.py)."""
    return learned_classify_bundle


def distill_config(folder, teacher, train_file, extra="", layers="[1]", test=None):
    test_line = f"  test: {test}\n" if test else ""
    return write(
        folder / "distill.yaml",
        f"task: distill\ndistill:\n  teacher: {teacher}\n  student_layers: {layers}\n"
        f"data:\n  train: {train_file}\n{test_line}{extra}"
        "train:\n  epochs: 6\n  learning_rate: 3.0e-3\n  warmup_ratio: 0.0\n  seed: 7\n"
        f"output_dir: {folder / 'student'}\n",
    )


def test_classify_student_learns_and_is_an_ordinary_bundle(tmp_path, cli, teacher, easy_data):
    teacher_acc = json.loads((teacher / "metrics.json").read_text())["test"]["accuracy"]
    assert teacher_acc >= 0.9
    train(cli, "distill", distill_config(tmp_path, teacher, easy_data["train"], test=easy_data["test"]))
    student = tmp_path / "student"
    info = json.loads((student / "bertkit.json").read_text())
    assert info["task"] == "classify" and info["labels"] == ["negative", "positive"]
    assert info["distillation"]["teacher"] == str(teacher.resolve())
    assert info["distillation"]["student_layers"] == [1] and info["distillation"]["alpha"] == 0.5
    assert info["distillation"]["teacher_metrics"]["test"]["accuracy"] == teacher_acc
    assert json.loads((student / "config.json").read_text())["num_hidden_layers"] == 1
    assert info["metrics"]["test"]["accuracy"] >= 0.85  # chance is 0.5

    code, out, err = cli("evaluate", "--model", student, "--data", easy_data["test"], "--output-dir", tmp_path / "ev")
    assert code == 0, out + err
    scores = json.loads((tmp_path / "ev" / "metrics.json").read_text())
    assert scores["accuracy"] >= 0.85
    texts = write(tmp_path / "in.txt", "a really great film\nthe plot was awful\n")
    code, out, err = cli("predict", "--model", student, "--input", texts, "--output", tmp_path / "p.jsonl")
    assert code == 0, out + err
    rows = [json.loads(line) for line in (tmp_path / "p.jsonl").read_text().splitlines()]
    assert [r["label"] for r in rows] == ["positive", "negative"]
    code, out, err = cli("export", "--model", student, "--output", tmp_path / "onnx")
    assert code == 0, out + err


def test_unlabeled_texts_teach_through_the_teacher(tmp_path, cli, teacher, easy_data):
    import random

    rng = random.Random(5)
    few = tmp_path / "few.csv"
    lines = easy_data["train"].read_text().splitlines()
    few.write_text("\n".join(lines[:21]) + "\n")  # the header and 20 labelled examples
    texts = [sentence(rng, label) for label in ["positive", "negative"] * 150]
    unlabeled = write(tmp_path / "more.txt", "\n".join(texts) + "\n")
    extra = f"  validation: {easy_data['test']}\n  unlabeled: {unlabeled}\n"
    train(cli, "distill", distill_config(tmp_path, teacher, few, extra, test=easy_data["test"]))
    info = json.loads((tmp_path / "student" / "bertkit.json").read_text())
    assert info["distillation"]["unlabeled_examples"] == 300
    assert info["distillation"]["labelled_examples"] == 20
    assert info["training"]["train_examples"] == 320
    assert info["metrics"]["test"]["accuracy"] >= 0.85


def test_ner_student(tmp_path_factory, tmp_path, cli, tiny_model, ner_data):
    folder = tmp_path_factory.mktemp("ner-teacher")
    config = write(
        folder / "t.yaml",
        f"task: ner\nmodel:\n  name: {tiny_model}\n  max_length: 32\n"
        f"data:\n  train: {ner_data['train']}\n  test: {ner_data['test']}\n"
        "train:\n  epochs: 8\n  learning_rate: 3.0e-3\n  warmup_ratio: 0.0\n  seed: 7\n"
        f"output_dir: {folder / 'model'}\n",
    )
    train(cli, "ner", config)
    teacher = folder / "model"
    assert json.loads((teacher / "metrics.json").read_text())["test"]["f1"] >= 0.8
    unlabeled = write(tmp_path / "more.txt", "alice met bruno in paris\nthe staff saw hana near oslo\n")
    extra = f"  unlabeled: {unlabeled}\n"
    train(cli, "distill", distill_config(tmp_path, teacher, ner_data["train"], extra, test=ner_data["test"]))
    info = json.loads((tmp_path / "student" / "bertkit.json").read_text())
    assert info["task"] == "ner" and info["labels"] == json.loads((teacher / "bertkit.json").read_text())["labels"]
    assert info["distillation"]["unlabeled_examples"] == 2
    assert info["metrics"]["test"]["f1"] >= 0.7
    texts = write(tmp_path / "in.txt", "alice visited paris\n")
    code, out, err = cli("predict", "--model", tmp_path / "student", "--input", texts, "--output", tmp_path / "p.jsonl")
    assert code == 0, out + err
    found = json.loads((tmp_path / "p.jsonl").read_text())["entities"]
    assert {e["type"] for e in found} == {"PER", "LOC"}


def test_multi_label_and_regression_students(tmp_path, cli, tiny_model):
    rng = random.Random(3)
    multi, reg, more = tmp_path / "multi.jsonl", tmp_path / "reg.csv", []
    with multi.open("w") as m, reg.open("w", newline="") as r:
        writer = csv.writer(r)
        writer.writerow(["text", "score"])
        for _ in range(240):
            words = rng.sample(["great", "awful", "film", "meal", "the", "was"], 4)
            tags = [t for t, w in (("praise", "great"), ("blame", "awful")) if w in words]
            m.write(json.dumps({"text": " ".join(words), "label": tags}) + "\n")
            writer.writerow([" ".join(words), words.count("great") * 2.5 + 0.5])
            more.append(" ".join(rng.sample(["great", "awful", "film", "meal", "the", "was"], 4)))
    unlabeled = write(tmp_path / "more.txt", "\n".join(more) + "\n")
    for name, data, label in (("multi", multi, "label"), ("reg", reg, "score")):
        teacher = write(
            tmp_path / f"{name}.yaml",
            f"task: classify\nmodel:\n  name: {tiny_model}\n  max_length: 16\n"
            f"data:\n  train: {data}\n  label_column: {label}\n"
            "train:\n  epochs: 6\n  learning_rate: 3.0e-3\n  warmup_ratio: 0.0\n  seed: 7\n"
            f"output_dir: {tmp_path / name}\n",
        )
        train(cli, "classify", teacher)
        folder = tmp_path / f"{name}-student"
        folder.mkdir()
        # data.label_column is left out: the teacher's (score) is followed
        train(cli, "distill", distill_config(folder, tmp_path / name, data, f"  unlabeled: {unlabeled}\n"))
    info = json.loads((tmp_path / "multi-student" / "student" / "bertkit.json").read_text())
    assert info["problem_type"] == "multi_label" and info["labels"] == ["blame", "praise"]
    assert info["metrics"]["validation"]["f1_micro"] >= 0.8
    info = json.loads((tmp_path / "reg-student" / "student" / "bertkit.json").read_text())
    assert info["problem_type"] == "regression" and info["label_column"] == "score"
    assert info["metrics"]["validation"]["spearman"] >= 0.6  # two target values cap it; chance is 0


def test_a_pair_teacher_teaches_a_pair_student_on_unlabelled_pairs(tmp_path, cli, tiny_model):
    """A teacher of (premise, hypothesis) pairs: data.unlabeled (a TSV with both columns) reaches
    the student as pairs, and the student is a pair classifier. Unlabelled text without its pair,
    and data.labels that are not the teacher's, stop the run."""
    rng = random.Random(3)

    def pairs(path, n, labelled=True):
        rows = ["premise\thypothesis" + ("\tlabel" if labelled else "")]
        for i in range(n):
            kind = ["positive", "negative"][i % 2]
            row = f"{sentence(rng, 'positive')}\t{sentence(rng, kind)}"
            rows.append(row + (f"\t{kind}" if labelled else ""))
        return write(path, "\n".join(rows) + "\n")

    recipe = "train:\n  epochs: 1\n  batch_size: 16\n  eval_strategy: 'no'\n  seed: 7\n"
    train_file, test_file = pairs(tmp_path / "train.tsv", 32), pairs(tmp_path / "test.tsv", 8)
    teacher_config = write(
        tmp_path / "teacher.yaml",
        f"task: classify\nmodel:\n  name: {tiny_model}\n  max_length: 32\n"
        f"data:\n  train: {train_file}\n  validation: {test_file}\n  text_column: premise\n"
        f"  text_pair_column: hypothesis\n{recipe}output_dir: {tmp_path / 'teacher'}\n",
    )
    train(cli, "classify", teacher_config)

    def student(data_yaml):
        return write(
            tmp_path / "distill.yaml",
            f"task: distill\ndistill:\n  teacher: {tmp_path / 'teacher'}\n  student_layers: [0]\n"
            f"data:\n  train: {train_file}\n  validation: {test_file}\n{data_yaml}{recipe}"
            f"output_dir: {tmp_path / 'student'}\n",
        )

    train(cli, "distill", student(f"  unlabeled: {pairs(tmp_path / 'more.tsv', 8, labelled=False)}\n"))
    info = json.loads((tmp_path / "student" / "bertkit.json").read_text())
    assert info["text_column"] == "premise" and info["text_pair_column"] == "hypothesis"
    assert info["distillation"]["unlabeled_examples"] == 8

    lines = write(tmp_path / "more.txt", "a single text\n")
    code, out, err = cli("train", "distill", "-c", student(f"  unlabeled: {lines}\n"), "--overwrite")
    assert code == 2 and "has no 'hypothesis' column. The teacher reads pairs" in " ".join((out + err).split())
    code, out, err = cli("train", "distill", "-c", student("  labels: [positive, other]\n"), "--overwrite")
    assert code == 2 and "are not the teacher's labels" in " ".join((out + err).split())

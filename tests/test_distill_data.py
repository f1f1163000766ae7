"""What a distill run reads follows its teacher: data.unlabeled is read with the teacher's text
(and pair) columns, a pair teacher's unlabelled examples keep their second text, and data.labels
given in the config must be the teacher's labels, never silently replaced."""

import json

import datasets
import pytest

from bertkit.config import load_config
from bertkit.core.errors import BertkitError
from bertkit.tasks.distill.teacher import check_pairs, read_unlabeled, teacher_of, with_unlabeled


def bundle(folder, task="classify", labels=("entailment", "neutral", "contradiction"), data=None, **info):
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config.json").write_text(json.dumps({"architectures": ["BertForSequenceClassification"]}))
    described = {
        "task": task,
        "max_length": 48,
        "labels": list(labels),
        "problem_type": "single_label",
        "config": {"task": task, "data": data or {}},
        **info,
    }
    (folder / "bertkit.json").write_text(json.dumps(described))
    return folder


def config(tmp_path, teacher, data_yaml=""):
    path = tmp_path / "run.yaml"
    path.write_text(f"task: distill\ndistill:\n  teacher: {teacher}\ndata:\n  train: x.csv\n{data_yaml}")
    return load_config(path)


NLI = {"text_column": "premise", "text_pair_column": "hypothesis", "label_column": "label"}


def test_a_pair_teachers_unlabelled_examples_keep_their_pair(tmp_path):
    teacher = teacher_of(config(tmp_path, bundle(tmp_path / "t", data=NLI, text_pair_column="hypothesis")))
    more = tmp_path / "more.tsv"
    more.write_text("premise\thypothesis\nA man sleeps.\tA person rests.\nTwo dogs run.\tCats fly.\n")
    found = read_unlabeled([str(more)], teacher)
    assert [(e["text"], e["pair"]) for e in found] == [
        ("A man sleeps.", "A person rests."),
        ("Two dogs run.", "Cats fly."),
    ]
    train = datasets.Dataset.from_list(
        [{"premise": "p", "hypothesis": "h", "label": "neutral", "_where": "train.tsv:2"}]
    )
    merged = with_unlabeled(train, found, teacher).to_list()
    assert [(r["premise"], r["hypothesis"], r["distill_unlabeled"]) for r in merged] == [
        ("p", "h", False),
        ("A man sleeps.", "A person rests.", True),
        ("Two dogs run.", "Cats fly.", True),
    ]
    assert merged[1]["_where"] == f"{more}:2"


def test_a_pair_teacher_refuses_unlabelled_text_without_its_pair(tmp_path):
    teacher = teacher_of(config(tmp_path, bundle(tmp_path / "t", data=NLI, text_pair_column="hypothesis")))
    lines = tmp_path / "more.txt"
    lines.write_text("A man sleeps.\n")
    with pytest.raises(BertkitError, match="has no 'hypothesis' column. The teacher reads pairs"):
        read_unlabeled([str(lines)], teacher)
    records = tmp_path / "more.jsonl"
    records.write_text('{"premise": "a", "hypothesis": "b"}\n{"premise": "c"}\n')
    with pytest.raises(BertkitError, match=rf"{records}:2: no 'hypothesis'"):
        read_unlabeled([str(records)], teacher)


def test_unlabelled_tables_follow_the_teachers_text_column(tmp_path):
    """The teacher read `sentence`: so do data.unlabeled's tables, as the distill config leaves it out."""
    teacher = teacher_of(config(tmp_path, bundle(tmp_path / "t", labels=("0", "1"), data={"text_column": "sentence"})))
    table = tmp_path / "more.csv"
    table.write_text("text,sentence\nnot this,a fine film\n")
    assert [e["text"] for e in read_unlabeled([str(table)], teacher)] == ["a fine film"]
    lines = tmp_path / "more.txt"  # a text file: one text a line, whatever the column's name
    lines.write_text("one text\n\nanother\n")
    assert [e["text"] for e in read_unlabeled([str(lines)], teacher)] == ["one text", "another"]
    # the distill config's own column wins
    teacher = teacher_of(config(tmp_path, tmp_path / "t", "  text_column: text\n"))
    assert [e["text"] for e in read_unlabeled([str(table)], teacher)] == ["not this"]
    missing = tmp_path / "other.csv"
    missing.write_text("review\nfine\n")
    with pytest.raises(BertkitError, match="has no 'text' column, the text the teacher reads"):
        read_unlabeled([str(missing)], teacher)


def test_the_student_reads_pairs_if_and_only_if_the_teacher_did(tmp_path):
    teacher = teacher_of(config(tmp_path, bundle(tmp_path / "t", data=NLI, text_pair_column="hypothesis")))
    assert teacher.cfg.data.text_pair_column == "hypothesis"
    check_pairs({"text_pair_column": "hypothesis"}, teacher)
    with pytest.raises(BertkitError, match="the teacher reads pairs of texts"):
        check_pairs({"text_pair_column": None}, teacher)
    single = teacher_of(config(tmp_path, bundle(tmp_path / "s", labels=("0", "1"))))
    with pytest.raises(BertkitError, match="the teacher reads single texts"):
        check_pairs({"text_pair_column": "other"}, single)


def test_a_pair_column_only_in_the_bundle_is_followed(tmp_path):
    """A teacher whose config does not record the pair column (an older bundle) is followed by
    what its bertkit.json records."""
    teacher = teacher_of(config(tmp_path, bundle(tmp_path / "t", text_pair_column="hypothesis")))
    assert teacher.cfg.data.text_pair_column == "hypothesis"


def test_given_labels_must_be_the_teachers(tmp_path, capsys):
    teacher = bundle(tmp_path / "t")
    same = teacher_of(config(tmp_path, teacher, "  labels: [entailment, neutral, contradiction]\n"))
    assert same.cfg.data.labels == ["entailment", "neutral", "contradiction"]
    reordered = teacher_of(config(tmp_path, teacher, "  labels: [contradiction, entailment, neutral]\n"))
    assert reordered.cfg.data.labels == ["entailment", "neutral", "contradiction"]  # the teacher's output order
    assert "the student's outputs keep the teacher's order" in " ".join(capsys.readouterr().err.split())
    with pytest.raises(BertkitError, match="not the teacher's labels .*: the teacher's contradiction missing; other"):
        teacher_of(config(tmp_path, teacher, "  labels: [entailment, neutral, other]\n"))
    regression = bundle(tmp_path / "r", labels=("score",), problem_type="regression")
    with pytest.raises(BertkitError, match="the teacher is a regression model"):
        teacher_of(config(tmp_path, regression, "  labels: [a, b]\n"))


def test_given_ner_labels_are_the_teachers_entity_types(tmp_path):
    teacher = bundle(tmp_path / "ner", task="ner", labels=("O", "B-LOC", "I-LOC", "B-PER", "I-PER"))
    cfg = config(tmp_path, teacher, "  labels: [O, B_PER, I_PER, S_LOC, B_LOC]\n")
    assert teacher_of(cfg).cfg.data.labels == ["O", "B-LOC", "I-LOC", "B-PER", "I-PER"]
    with pytest.raises(BertkitError, match="not the teacher's entity types"):
        teacher_of(config(tmp_path, teacher, "  labels: [O, B-PER, I-PER]\n"))


def test_a_problem_type_that_is_not_the_teachers_is_refused_not_replaced(tmp_path):
    teacher = bundle(tmp_path / "t", labels=("a", "b"))
    assert teacher_of(config(tmp_path, teacher, "classify:\n  problem_type: single_label\n")).cfg.classify.problem_type
    with pytest.raises(BertkitError, match="classify.problem_type: multi_label, but the teacher is single_label"):
        teacher_of(config(tmp_path, teacher, "classify:\n  problem_type: multi_label\n"))

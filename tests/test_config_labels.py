"""A label list given in the config (data.labels, ner.class_weights by name) is read by the same
function as the data's own labels, so a list that names the data's labels in the data's spelling
is never refused as foreign: NER tags in any scheme with `-` or `_`, classify names with white
space around them or written as numbers."""

import pytest

from bertkit.config import load_config
from bertkit.core.errors import BertkitError
from bertkit.tasks.classify.labels import encode_labels
from bertkit.tasks.registry import get_task


def loaded(tmp_path, task: str, data_yaml: str, *sets: str):
    path = tmp_path / "run.yaml"
    path.write_text(f"task: {task}\nmodel:\n  name: none\ndata:\n{data_yaml}")
    cfg = load_config(path, list(sets), task=task)
    implementation = get_task(task)
    ds = implementation.training.load(cfg)
    return cfg, implementation, ds


def conll(path, tags_of):
    sentences = [[("John", "PER"), ("lives", None), ("in", None), ("Paris", "LOC")]] * 12
    lines = []
    for words in sentences:
        for word, kind in words:
            lines.append(f"{word} {tags_of(kind)}")
        lines.append("")
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.mark.parametrize(
    "written, given",
    [
        (lambda k: f"B_{k}" if k else "O", "[O, B_PER, I_PER, B_LOC, I_LOC]"),  # IOB2, underscores
        (lambda k: f"S_{k}" if k else "O", "[O, B_PER, I_PER, E_PER, S_PER, B_LOC, I_LOC, E_LOC, S_LOC]"),  # BIOES
        (lambda k: f"U-{k}" if k else "O", "[O, B-PER, I-PER, L-PER, U-PER, B-LOC, I-LOC, L-LOC, U-LOC]"),  # BILOU
        (lambda k: f"I-{k}" if k else "O", "[O, I-PER, I-LOC]"),  # IOB1
        (lambda k: f"B-{k}" if k else "O", "[O, B_PER, I_PER, B_LOC, I_LOC]"),  # the list and data spelt apart
    ],
)
def test_ner_labels_given_in_the_datas_spelling_are_its_tags(tmp_path, written, given):
    from bertkit.tasks.ner.tagging import tag_ids

    train = conll(tmp_path / "train.conll", written)
    cfg, task, ds = loaded(tmp_path, "ner", f"  train: {train}\n  labels: {given}\n")
    info = task.training.setup(ds, cfg)
    assert info["labels"] == ["O", "B-LOC", "I-LOC", "B-PER", "I-PER"]
    for split in ds.values():  # every tag of the data is one the model knows
        tag_ids([list(t) for t in split["tags"]], info, "train")


def test_a_given_ner_label_that_is_no_tag_is_named(tmp_path):
    train = conll(tmp_path / "train.conll", lambda k: f"B-{k}" if k else "O")
    cfg, task, ds = loaded(tmp_path, "ner", f"  train: {train}\n  labels: [O, B-PER, PERSON]\n")
    with pytest.raises(BertkitError, match="data.labels: 'PERSON' is not a tag"):
        task.training.setup(ds, cfg)


def test_ner_class_weights_by_tag_name_take_the_datas_spelling(tmp_path):
    train = conll(tmp_path / "train.conll", lambda k: f"B_{k}" if k else "O")
    cfg, task, ds = loaded(tmp_path, "ner", f"  train: {train}\n", "ner.class_weights={B_PER: 3, LOC: 2}")
    info = task.training.setup(ds, cfg)
    loss = task.training.loss(info, cfg, {"labels": []})
    assert loss.settings["weights"] == {"O": 1.0, "B-LOC": 2.0, "I-LOC": 2.0, "B-PER": 3.0, "I-PER": 1.0}


def test_classify_labels_given_with_spaces_or_as_numbers_are_the_datas(tmp_path):
    train = tmp_path / "train.csv"
    train.write_text("text,label\n" + "".join(f"text {i},{i % 3}\n" for i in range(30)))
    cfg, task, ds = loaded(tmp_path, "classify", f"  train: {train}\n  labels: [' 0', '1 ', 2.0]\n")
    info = task.training.setup(ds, cfg)
    assert info["labels"] == ["0", "1", "2"]
    encode_labels(ds["train"]["label"], info, "train")  # every label found


def test_classify_labels_the_same_once_read_are_refused(tmp_path):
    train = tmp_path / "train.csv"
    train.write_text("text,label\n" + "".join(f"text {i},{'ab'[i % 2]}\n" for i in range(20)))
    cfg, task, ds = loaded(tmp_path, "classify", f"  train: {train}\n  labels: [a, ' a', b]\n")
    with pytest.raises(BertkitError, match="data.labels: 'a' is listed twice"):
        task.training.setup(ds, cfg)


def test_a_models_own_label_spelling_is_read_as_the_datas():
    """At evaluate time the data's tags (normalised to IOB2 with `-`) are looked up among a
    model's labels in the same spelling: a model (say, one trained elsewhere) whose labels are
    `B_PER` knows the data's `B-PER`; one whose labels are BIOES has its tags read as IOB2."""
    from bertkit.tasks.ner.tagging import tag_ids
    from bertkit.tasks.ner.tags import iob2_over_seen

    info = {"labels": ["O", "B_PER", "I_PER", "B_LOC", "I_LOC"]}
    assert tag_ids([["B-PER", "I-PER", "O", "B-LOC"]], info, "evaluation") == [[1, 2, 0, 3]]
    with pytest.raises(BertkitError, match="tag 'B-ORG' is not one the model knows"):
        tag_ids([["B-ORG"]], info, "evaluation")
    raw = ["S-PER", "O", "B-LOC", "E-LOC", "U-ORG", "I_MISC"]
    assert iob2_over_seen(raw, [True] * 6) == ["B-PER", "O", "B-LOC", "I-LOC", "B-ORG", "B-MISC"]


def test_a_tag_the_given_labels_lack_is_named_with_its_file_and_line(tmp_path):
    from bertkit.tasks.ner.tagging import tag_ids

    train = conll(tmp_path / "train.conll", lambda k: f"B-{k}" if k else "O")
    cfg, task, ds = loaded(tmp_path, "ner", f"  train: {train}\n  labels: [O, B-PER, I-PER]\n")
    info = task.training.setup(ds, cfg)
    split = ds["train"]
    with pytest.raises(BertkitError, match=rf"^{train}:\d+: tag 'B-LOC' is not one the model knows"):
        tag_ids([list(t) for t in split["tags"]], info, "train", split)

import pytest

from bertkit.core.data.conll import read_conll
from bertkit.core.errors import BertkitError
from bertkit.tasks.ner.tags import detect_scheme, entities, label_list, to_iob2


def test_detect_schemes():
    assert detect_scheme([["I-PER", "I-PER", "O", "I-LOC"]]) == "IOB1"
    assert detect_scheme([["B-PER", "I-PER", "O", "B-LOC"]]) == "IOB2"
    assert detect_scheme([["S-PER", "O", "B-LOC", "E-LOC"]]) == "BIOES"
    assert detect_scheme([["U-PER", "O", "B-LOC", "L-LOC"]]) == "BILOU"


def test_iob1_to_iob2():
    # CoNLL-2003: B- only between two adjacent entities of one type
    tags = ["I-PER", "I-PER", "B-PER", "O", "I-LOC", "I-ORG"]
    result = to_iob2(tags, "IOB1")
    assert result.tags == ["B-PER", "I-PER", "B-PER", "O", "B-LOC", "B-ORG"]
    assert result.repaired == 0


def test_bioes_and_bilou_to_iob2():
    assert to_iob2(["S-PER", "B-LOC", "I-LOC", "E-LOC", "O"], "BIOES").tags == ["B-PER", "B-LOC", "I-LOC", "I-LOC", "O"]
    assert to_iob2(["U-PER", "B-LOC", "L-LOC"], "BILOU").tags == ["B-PER", "B-LOC", "I-LOC"]


def test_invalid_iob2_is_repaired_and_counted():
    result = to_iob2(["B-LOC", "I-PER", "O", "I-PER"], "IOB2")
    assert result.tags == ["B-LOC", "B-PER", "O", "B-PER"]
    assert result.repaired == 2


def test_entities_from_iob2():
    assert entities(["B-PER", "I-PER", "B-PER", "O", "B-LOC"]) == [("PER", 0, 2), ("PER", 2, 3), ("LOC", 4, 5)]
    assert entities(["O", "O"]) == []


def test_label_list():
    assert label_list(["PER", "LOC"]) == ["O", "B-LOC", "I-LOC", "B-PER", "I-PER"]


def test_read_conll(tmp_path):
    path = tmp_path / "d.conll"
    path.write_text("-DOCSTART- -X- -X- O\n\nEU NNP B-NP I-ORG\nrejects VBZ B-VP O\n\n\nPeter NNP B-NP I-PER\n")
    records = list(read_conll(str(path)))
    assert [r["tokens"] for r in records] == [["EU", "rejects"], ["Peter"]]
    assert [r["tags"] for r in records] == [["I-ORG", "O"], ["I-PER"]]
    assert records[1]["line"] == 7
    assert [r["tokens"] for r in read_conll(str(path), tag_column=None)] == [["EU", "rejects"], ["Peter"]]
    tabbed = tmp_path / "t.tsv"
    tabbed.write_text("Paris\tB-LOC\nis\tO\n")
    assert list(read_conll(str(tabbed), 0, 1))[0]["tags"] == ["B-LOC", "O"]


def test_conll_wrong_column_count(tmp_path):
    path = tmp_path / "d.conll"
    path.write_text("EU NNP B-NP I-ORG\nrejects VBZ O\n")
    with pytest.raises(BertkitError, match=rf"{path}:2: expected 4 columns \(as on line 1\), found 3"):
        list(read_conll(str(path)))


def test_ner_metric_strict():
    from bertkit.core import metrics

    result = metrics.load("ner").compute(
        predictions=[["B-PER", "I-PER", "O", "B-LOC"], ["I-ORG", "O"]],
        references=[["B-PER", "I-PER", "O", "B-ORG"], ["B-ORG", "O"]],
    )
    # strict IOB2: the I-ORG without B- is not an entity; PER right; LOC wrong
    assert result["precision"] == pytest.approx(1 / 2)
    assert result["recall"] == pytest.approx(1 / 3)
    assert result["per_type"]["PER"]["f1"] == 1.0 and result["per_type"]["ORG"]["recall"] == 0.0
    assert result["token_accuracy"] == pytest.approx(4 / 6)
    # lenient (conlleval): the stray I-ORG opens an ORG entity that matches the reference
    assert result["lenient_precision"] == pytest.approx(2 / 3)
    assert result["lenient_recall"] == pytest.approx(2 / 3)


def test_hub_layout_tag_ids_become_names():
    import datasets

    from bertkit.tasks.ner.reading import _hub_tags
    from bertkit.tasks.ner.settings import NerConfig

    names = ["O", "B-PER", "I-PER"]
    features = datasets.Features(
        {
            "tokens": datasets.Sequence(datasets.Value("string")),
            "ner_tags": datasets.Sequence(datasets.ClassLabel(names=names)),
        }
    )
    ds = datasets.Dataset.from_dict({"tokens": [["ann", "lee", "ran"]], "ner_tags": [[1, 2, 0]]}, features=features)
    rows = list(_hub_tags(ds, NerConfig(tags_field="ner_tags")))
    assert rows == [{"tokens": ["ann", "lee", "ran"], "ner_tags": ["B-PER", "I-PER", "O"]}]


def test_the_scheme_found_at_training_is_recorded_and_read_back(tmp_path, tiny_model, cli):
    """load + setup (no training): the training file's scheme and repairs go into the
    description (bertkit.json); evaluate reads a file in that scheme, not in a re-detected one."""
    import json
    import shutil

    from bertkit.config import load_config
    from bertkit.tasks.ner.reading import scheme_for
    from bertkit.tasks.ner.task import TASK

    train = tmp_path / "train.conll"
    train.write_text("EU I-ORG\nrejects O\n\nPeter I-PER\nBlackburn I-PER\n\nParis I-LOC\n")
    config = tmp_path / "run.yaml"
    config.write_text(f"task: ner\nmodel:\n  name: {tiny_model}\ndata:\n  train: {train}\n  validation: {train}\n")
    info = TASK.training.setup(TASK.training.load(load_config(config)), load_config(config))
    assert info["tag_scheme"] == {"scheme": "IOB1", "detected": True, "repaired": {"train": 0, "validation": 0}}
    # an IOB2 model, a test file whose one mistake (I- after O) would make it look IOB1: read as IOB2, repaired
    mistaken = [["B-PER", "I-PER", "O"], ["O", "I-LOC"]]
    assert scheme_for(mistaken, "auto", None, "test") == "IOB1"  # a bundle from before: detected, as before
    assert scheme_for(mistaken, "auto", "IOB2", "test") == "IOB2"
    assert scheme_for([["S-PER", "O"]], "auto", "IOB2", "test") == "BIOES"  # tags of another scheme: its own
    assert scheme_for(mistaken, "BIOES", "IOB2", "test") == "BIOES"  # ner.scheme set: as set

    bundle = tmp_path / "bundle"  # what `bertkit info --model` shows, with the field and without
    bundle.mkdir()
    shutil.copy(tiny_model / "config.json", bundle)
    labels = ["O", "B-LOC", "I-LOC", "B-ORG", "I-ORG", "B-PER", "I-PER"]
    (bundle / "config.json").write_text(
        json.dumps({**json.loads((bundle / "config.json").read_text()), "id2label": dict(enumerate(labels))})
    )
    (bundle / "bertkit.json").write_text(json.dumps({**info, "labels": labels}))
    code, out, err = cli("info", "--model", bundle)
    assert code == 0 and "IOB1 (detected in the training data" in out, out + err
    old = {k: v for k, v in info.items() if k != "tag_scheme"}
    (bundle / "bertkit.json").write_text(json.dumps({**old, "labels": labels}))
    code, out, err = cli("info", "--model", bundle)
    assert code == 0 and "tag scheme" in out and "not recorded" in out, out + err


def test_span_data_is_scored_on_characters(tiny_model):
    """A gold span that stops inside a word ("tok" of "tokyo") against a model that tags the whole
    word: wrong on characters, though on the word tags (the gold widened to words) it was right."""
    from transformers import AutoTokenizer

    from bertkit.tasks.ner.character_scores import character_tags, on_characters

    assert character_tags(6, [("LOC", 1, 3), ("PER", 3, 4)]) == ["O", "B-LOC", "I-LOC", "B-PER", "O", "O"]
    tokenizer = AutoTokenizer.from_pretrained(tiny_model)
    text = "tokyo firms in paris ."
    gold = [[{"type": "LOC", "start": 0, "end": 3}, {"type": "LOC", "start": 15, "end": 21}]]  # "paris ": no space
    predicted = [["B-LOC", "O", "O", "B-LOC", "O"]]  # tokyo | firms | in | paris | .
    scores = on_characters([text], gold, predicted, tokenizer).score()
    assert (scores["precision"], scores["recall"]) == (0.5, 0.5)
    assert scores["character_accuracy"] == pytest.approx((len(text) - 2) / len(text))  # "yo" tagged, gold O
    with pytest.raises(RuntimeError, match="4 predicted tags for 5 words"):
        on_characters([text], gold, [predicted[0][:4]], tokenizer)


def test_only_spans_that_still_cut_a_word_are_counted(tiny_model, capsys):
    """Spans with white space at their edges, or ending before the mark on their last letter, were
    counted as cutting a word (so evaluate said whole-word tags could not match them, then scored 1.0)."""
    import datasets
    from transformers import AutoTokenizer

    from bertkit.tasks.ner.reading import words_and_tags

    tokenizer = AutoTokenizer.from_pretrained(tiny_model)
    text = " alice smith met jose\u0301 in paris ."
    spans = [
        {"type": "PER", "start": 0, "end": 13},  # " alice smith " : spaces at both edges
        {"type": "PER", "start": 17, "end": 21},  # "jose" without the accent on its e
        {"type": "LOC", "start": 26, "end": 28},  # "pa" of "paris": cuts it
    ]
    split = datasets.Dataset.from_list([{"text": text, "entities": spans}])
    _, tags = words_and_tags(split, tokenizer, "test")
    assert tags == [["B-PER", "I-PER", "O", "B-PER", "O", "B-LOC", "O"]]
    assert "1 entity span(s) cut through a word" in " ".join(capsys.readouterr().err.split())


def test_a_span_over_no_word_is_said_and_an_empty_one_named(tiny_model, capsys, tmp_path):
    import datasets
    from transformers import AutoTokenizer

    from bertkit.core.data_settings import DataSource
    from bertkit.tasks.ner.reading import read_examples, words_and_tags
    from bertkit.tasks.ner.settings import NerConfig

    tokenizer = AutoTokenizer.from_pretrained(tiny_model)
    text = "alice \u200b met bruno"  # the zero-width space is no word: a span over it alone cannot be tagged
    split = datasets.Dataset.from_list([{"text": text, "entities": [{"type": "PER", "start": 6, "end": 7}]}])
    assert words_and_tags(split, tokenizer, "test")[1] == [["O", "O", "O"]]
    assert "1 entity span(s) cover no word the tokenizer reads" in " ".join(capsys.readouterr().err.split())
    path = tmp_path / "empty.jsonl"
    path.write_text('{"text": "alice met bruno", "entities": [{"type": "PER", "start": 0, "end": 0}]}\n')
    with pytest.raises(BertkitError, match="is empty"):
        read_examples(DataSource(path=str(path)), NerConfig(), "text", "test")

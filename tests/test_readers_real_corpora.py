"""Data as real corpora write it: CSV/TSV without a header (AG News, the UCI sentiment files,
chABSA), text joined from several columns, CoNLL files named .txt (NCBI-disease), one file per
class (rt-polarity.pos / .neg, in Latin-1), and formats told from the content."""

import json
import random

import pytest
from helpers.checks import assert_refused
from helpers.tiny import NEGATIVE, POSITIVE, sentence

from bertkit.config import load_config
from bertkit.core.errors import BertkitError


def splits_of(tmp_path, yaml_text: str, task: str = "classify"):
    from bertkit.tasks.registry import get_task

    path = tmp_path / "run.yaml"
    path.write_text(f"task: {task}\nmodel:\n  name: none\n{yaml_text}")
    cfg = load_config(path, task=task)
    return cfg, get_task(task).training.load(cfg)


def said(capsys) -> str:
    """What bertkit told the user (the console writes to stderr), white space folded."""
    captured = capsys.readouterr()
    return " ".join((captured.out + captured.err).split())


def ag_news(path, n=60, seed=0, quote_all=True):
    """As AG News's test.csv: no header, every field quoted, label id / title / description."""
    rng = random.Random(seed)
    rows = []
    for i in range(n):
        label = 1 + i % 2
        word = rng.choice(POSITIVE if label == 1 else NEGATIVE)
        title, description = f"{word} news {i}", f"the day was {word}, says the report, with a comma"
        fields = [str(label), title, description]
        rows.append(",".join(f'"{f}"' for f in fields) if quote_all else ",".join(fields))
    path.write_text("\n".join(rows) + "\n", encoding="utf-8")
    return path


# ---------------------------------------------------------------- headerless tables, joined text


def test_headerless_csv_with_named_columns_and_joined_text(tmp_path):
    train = ag_news(tmp_path / "train.csv")
    cfg, ds = splits_of(
        tmp_path,
        f"data:\n  train: {train}\n  columns: [label, title, description]\n  text_column: [title, description]\n",
    )
    assert cfg.data.text_column == "title + description"
    rows = ds["train"].to_list() + ds["validation"].to_list()
    assert len(rows) == 60  # the first row is a record, not a header
    first = next(r for r in rows if r["title"] == "great news 0" or r["title"].endswith(" news 0"))
    assert first["title + description"] == f"{first['title']} {first['description']}"
    assert first["_where"].endswith("train.csv:1")
    assert {r["label"] for r in rows} == {"1", "2"}


def test_text_join_and_per_source_layout(tmp_path):
    train = ag_news(tmp_path / "train.csv")
    (tmp_path / "val.csv").write_text("label,title,description\n1,a,b\n2,c,\n", encoding="utf-8")
    _, ds = splits_of(
        tmp_path,
        f"data:\n  train: {{path: {train}, columns: [label, title, description]}}\n"
        f"  validation: {tmp_path / 'val.csv'}\n  text_column: [title, description]\n  text_join: ' | '\n",
    )
    assert ds["train"][0]["title + description"].count(" | ") == 1
    assert ds["validation"]["title + description"] == ["a | b", "c"]  # an empty part leaves no separator


def test_a_first_row_repeating_the_names_is_a_header(tmp_path):
    path = tmp_path / "t.tsv"
    path.write_text("text\tlabel\ngood film\tpos\nbad film\tneg\n", encoding="utf-8")
    _, ds = splits_of(tmp_path, f"data:\n  train: {path}\n  validation: {path}\n  columns: [text, label]\n")
    assert ds["validation"]["text"] == ["good film", "bad film"]
    _, ds = splits_of(
        tmp_path, f"data:\n  train: {path}\n  validation: {path}\n  columns: [text, label]\n  header: false\n"
    )
    assert ds["validation"]["text"] == ["text", "good film", "bad film"]


def test_headerless_file_without_columns_says_how_to_name_them(tmp_path):
    train = ag_news(tmp_path / "train.csv")
    with pytest.raises(BertkitError) as err:
        splits_of(tmp_path, f"data:\n  train: {train}\n")
    message = str(err.value)
    assert "no column 'text'" in message and "data.columns" in message and "looks like data" in message


def test_a_missing_part_of_joined_text_is_named(tmp_path):
    train = ag_news(tmp_path / "train.csv")
    with pytest.raises(BertkitError) as err:
        splits_of(
            tmp_path,
            f"data:\n  train: {train}\n  columns: [label, title, description]\n  text_column: [title, summary]\n",
        )
    assert "no column 'summary' (one of the columns data.text_column joins)" in str(err.value)


def test_a_part_left_out_of_some_json_records_counts_as_empty(tmp_path):
    """JSON lines often leave out an empty field. Whether or not the first record has it, a record
    without `description` is joined from its title alone: no record loses its title, no column is
    dropped (the columns once came from the first record alone)."""
    for first_has_it in (False, True):
        lines = []
        for i in range(20):
            record = {"title": f"title {i}", "label": ["a", "b"][i % 2]}
            if (i % 3 != 0) if not first_has_it else (i % 3 != 1):
                record["description"] = f"desc {i}"
            lines.append(json.dumps(record))
        train = tmp_path / "train.jsonl"
        train.write_text("\n".join(lines) + "\n", encoding="utf-8")
        _, ds = splits_of(tmp_path, f"data:\n  train: {train}\n  text_column: [title, description]\n")
        rows = ds["train"].to_list() + ds["validation"].to_list()
        assert len(rows) == 20
        for row in rows:
            i = int(row["title"].split()[1])
            expected = f"title {i} desc {i}" if row["description"] is not None else f"title {i}"
            assert row["title + description"] == expected


def test_the_first_record_does_not_decide_the_columns(tmp_path):
    train = tmp_path / "train.jsonl"
    lines = [{"text": "first", "label": "a"}] + [{"text": f"t{i}", "label": "b", "topic": "x"} for i in range(9)]
    train.write_text("\n".join(json.dumps(r) for r in lines) + "\n", encoding="utf-8")
    _, ds = splits_of(tmp_path, f"data:\n  train: {train}\n")
    rows = ds["train"].to_list() + ds["validation"].to_list()
    assert sorted(r["topic"] or "-" for r in rows) == ["-"] + ["x"] * 9


def test_a_joined_part_no_record_has_is_named(tmp_path):
    train = tmp_path / "train.jsonl"
    train.write_text("".join(json.dumps({"title": f"t{i}", "label": i % 2}) + "\n" for i in range(10)))
    with pytest.raises(BertkitError) as err:
        splits_of(tmp_path, f"data:\n  train: {train}\n  text_column: [title, descripton]\n")
    assert "no column 'descripton' (one of the columns data.text_column joins)" in str(err.value)
    assert "Columns there: title, label." in str(err.value)


def test_a_row_with_another_field_count_names_the_columns(tmp_path):
    path = tmp_path / "t.csv"
    path.write_text('"1","a","b"\n"2","c"\n', encoding="utf-8")
    with pytest.raises(BertkitError) as err:
        splits_of(tmp_path, f"data:\n  train: {path}\n  columns: [label, title, description]\n")
    assert f"{path}:2: expected 3 fields (as data.columns names), found 2" in str(err.value)


def test_uci_sentiment_txt_with_columns_is_read_as_tsv(tmp_path, capsys):
    path = tmp_path / "yelp_labelled.txt"
    path.write_text("Wow... Loved this place.\t1\nCrust is not good.\t0\nNot tasty, and rude.\t0\n" * 4)
    _, ds = splits_of(tmp_path, f"data:\n  train: {path}\n  columns: [text, label]\n")
    rows = ds["train"].to_list() + ds["validation"].to_list()
    assert {r["text"] for r in rows} == {"Wow... Loved this place.", "Crust is not good.", "Not tasty, and rude."}
    assert "read as tsv (every line has 2 tab-separated fields)" in said(capsys)


@pytest.mark.parametrize(
    "yaml_value, message",
    [
        ("columns: [label, label]", "'label' is named twice"),
        ("columns: []", "name every column"),
        ("encoding: klingon", "unknown text encoding 'klingon'"),
        ("encoding: utf-16", "convert the file to UTF-8"),
        ("text_column: []", "list the text columns by name"),
    ],
)
def test_layout_keys_are_checked(tmp_path, cli, yaml_value, message):
    path = tmp_path / "run.yaml"
    path.write_text(f"task: classify\ndata:\n  train: x.csv\n  {yaml_value}\n")
    code, _, err = cli("config", "show", "-c", path)
    assert_refused(code, err, message)


def test_one_source_one_origin(tmp_path, cli):
    path = tmp_path / "run.yaml"
    path.write_text("task: classify\ndata:\n  train: {path: a.txt, files: {pos: b.txt}}\n")
    code, _, err = cli("config", "show", "-c", path)
    assert_refused(code, err, "give one of a file path, `files: {label: path}` or `hub: NAME`")


# ---------------------------------------------------------------- one file per class, encodings


def rt_polarity(folder, n=30):
    """As the original rt-polarity.pos / .neg: one review a line, Latin-1 bytes."""
    rng = random.Random(3)
    for label, name in (("positive", "rt-polarity.pos"), ("negative", "rt-polarity.neg")):
        lines = [f"{sentence(rng, label)} caf\u00e9 na\u00efve" for _ in range(n)]
        (folder / name).write_bytes(("\n".join(lines) + "\n").encode("latin-1"))
    return folder / "rt-polarity.pos", folder / "rt-polarity.neg"


def test_one_file_per_class_in_latin1(tmp_path):
    pos, neg = rt_polarity(tmp_path)
    _, ds = splits_of(
        tmp_path, f"data:\n  train:\n    files: {{positive: {pos}, negative: {neg}}}\n  encoding: latin-1\n"
    )
    rows = ds["train"].to_list() + ds["validation"].to_list()
    assert len(rows) == 60 and {r["label"] for r in rows} == {"positive", "negative"}
    assert all("caf\u00e9 na\u00efve" in r["text"] for r in rows)
    assert any(r["_where"] == f"{neg}:1" for r in rows)


def test_latin1_without_the_encoding_names_the_line_and_the_key(tmp_path):
    pos, neg = rt_polarity(tmp_path)
    with pytest.raises(BertkitError) as err:
        splits_of(tmp_path, f"data:\n  train:\n    files: {{positive: {pos}, negative: {neg}}}\n")
    assert f"{pos}:1: not UTF-8 text" in str(err.value) and "data.encoding" in str(err.value)


def test_a_missing_class_file_is_named(tmp_path):
    pos, _ = rt_polarity(tmp_path)
    with pytest.raises(BertkitError) as err:
        splits_of(tmp_path, f"data:\n  train:\n    files: {{positive: {pos}, negative: {tmp_path / 'nope.neg'}}}\n")
    assert "the file of class 'negative'" in str(err.value)


def test_a_folder_of_label_txt_files(tmp_path):
    folder = tmp_path / "corpus"
    folder.mkdir()
    (folder / "sports.txt").write_text("the match\nthe goal\n\nthe team\n", encoding="utf-8")
    (folder / "politics.txt").write_text("the vote\nthe law\nthe party\n", encoding="utf-8")
    _, ds = splits_of(tmp_path, f"data:\n  train: {folder}\n  validation: {folder}\n")
    assert sorted(zip(ds["validation"]["label"], ds["validation"]["text"], strict=True)) == [
        ("politics", "the law"),
        ("politics", "the party"),
        ("politics", "the vote"),
        ("sports", "the goal"),
        ("sports", "the match"),
        ("sports", "the team"),
    ]


def test_a_model_folder_given_as_data_is_named_as_a_model(tmp_path):
    """A bundle (with its plots/ sub-folder) is not a folder-per-class data set."""
    bundle = tmp_path / "bundle"
    (bundle / "plots").mkdir(parents=True)
    (bundle / "plots" / "confusion_matrix.png").write_bytes(b"\x89PNG\r\n\x1a\n\xff\xfe")
    (bundle / "config.json").write_text("{}")
    with pytest.raises(BertkitError) as err:
        splits_of(tmp_path, f"data:\n  train: {bundle}\n")
    assert "holds a model" in str(err.value) and "png" not in str(err.value)


# ---------------------------------------------------------------- formats told from the content


def ncbi_disease(path, n=40):
    """As NCBI-disease's train.txt: tab-separated, four columns, IOB2 tags last, blank lines."""
    rng = random.Random(5)
    out = []
    for _ in range(n):
        words = ["the", "patient", "had", rng.choice(["breast", "colon"]), "cancer", "."]
        tags = ["O", "O", "O", "B-Disease", "I-Disease", "O"]
        out += [f"{w}\t-\t-\t{t}" for w, t in zip(words, tags, strict=True)] + [""]
    path.write_text("\n".join(out) + "\n", encoding="utf-8")
    return path


def test_ner_reads_conll_named_txt_and_says_why(tmp_path, capsys):
    train = ncbi_disease(tmp_path / "train.txt")
    _, ds = splits_of(tmp_path, f"data:\n  train: {train}\n", task="ner")
    assert ds["train"][0]["tokens"][:2] == ["the", "patient"]
    assert "read as CoNLL (every line has 4 columns and the last one holds tags such as B-Disease" in said(capsys)


def test_ner_on_plain_text_names_the_format_it_assumed(tmp_path):
    path = tmp_path / "train.txt"
    path.write_text("the patient had cancer\nanother line\n", encoding="utf-8")
    with pytest.raises(BertkitError) as err:
        splits_of(tmp_path, f"data:\n  train: {path}\n", task="ner")
    assert "read as plain text lines (from its name)" in str(err.value) and "format: conll" in str(err.value)


@pytest.mark.parametrize(
    "content, fmt",
    [
        ('{"text": "a", "label": "x"}\n{"text": "b", "label": "y"}\n', "jsonl"),
        ('[{"text": "a"}]\n', "json"),
        ("good\tpos\nbad\tneg\n", "tsv"),
        ("one text\nanother text\n", "text"),
        ("EU B-ORG\nrejects O\n\nPeter B-PER\n", "conll"),
    ],
)
def test_format_from_content_when_the_name_says_nothing(tmp_path, content, fmt):
    from bertkit.core.data.formats import detect_format

    path = tmp_path / "data.dat"
    path.write_text(content, encoding="utf-8")
    assert detect_format(str(path)) == fmt
    bare = tmp_path / "data"
    bare.write_text(content, encoding="utf-8")
    assert detect_format(str(bare)) == fmt


def test_an_empty_file_without_extension_says_so(tmp_path):
    from bertkit.core.data.formats import detect_format

    path = tmp_path / "data"
    path.write_text("\n\n", encoding="utf-8")
    with pytest.raises(BertkitError, match="cannot tell the format from the name or the content \\(it is empty\\)"):
        detect_format(str(path))


# ---------------------------------------------------------------- end to end through bertkit train

RECIPE = "epochs: 6\n  batch_size: 16\n  learning_rate: 3.0e-3\n  warmup_ratio: 0.0\n  seed: 7"  # as test_classify_e2e


@pytest.mark.slow
def test_train_evaluate_predict_on_headerless_joined_columns(tmp_path, cli, tiny_model):
    train, test = ag_news(tmp_path / "train.csv", 240, seed=1), ag_news(tmp_path / "test.csv", 40, seed=2)
    config = tmp_path / "run.yaml"
    config.write_text(
        f"task: classify\nmodel:\n  name: {tiny_model}\n  max_length: 32\n"
        f"data:\n  train: {train}\n  columns: [label, title, description]\n  text_column: [title, description]\n"
        f"train:\n  {RECIPE}\noutput_dir: {tmp_path / 'model'}\n"
    )
    code, _, err = cli("train", "classify", "-c", config)
    assert code == 0, err
    info = json.loads((tmp_path / "model" / "bertkit.json").read_text())
    assert info["text_column"] == "title + description" and info["text_join"] == " "
    code, _, err = cli(
        "evaluate", "-m", tmp_path / "model", "-d", test, "--columns", "label,title,description", "-o", tmp_path / "ev"
    )
    assert code == 0, err
    assert json.loads((tmp_path / "ev" / "metrics.json").read_text())["accuracy"] > 0.8
    records = tmp_path / "in.jsonl"
    records.write_text(
        json.dumps({"title": "great news", "description": "a great day"})
        + "\n\n"
        + json.dumps({"title": "awful news", "description": "an awful day"})
        + "\n"
    )
    code, out, err = cli("predict", "-m", tmp_path / "model", "-i", records)
    assert code == 0, err
    results = [json.loads(line) for line in out.splitlines()]
    assert [r.get("label") for r in results] == ["1", None, "2"]
    assert results[0]["text"] == "great news a great day" and results[1]["empty"] is True
    code, _, err = cli("predict", "-m", tmp_path / "model", "-i", test)  # headerless, without --columns
    said = " ".join(err.split())
    assert code == 2 and "no 'title' or 'description' field" in said and "--columns label,title,description" in said
    records.write_text(json.dumps({"title": "great news"}) + "\n")  # a part left out: the title alone
    code, out, err = cli("predict", "-m", tmp_path / "model", "-i", records)
    assert code == 0 and json.loads(out)["text"] == "great news", err


@pytest.mark.slow
def test_train_on_one_file_per_class_in_latin1(tmp_path, cli, tiny_model):
    pos, neg = rt_polarity(tmp_path, 120)
    config = tmp_path / "run.yaml"
    config.write_text(
        f"task: classify\nmodel:\n  name: {tiny_model}\n  max_length: 32\n"
        f"data:\n  train:\n    files: {{positive: {pos}, negative: {neg}}}\n  encoding: latin-1\n"
        f"train:\n  {RECIPE}\noutput_dir: {tmp_path / 'model'}\n"
    )
    code, _, err = cli("train", "classify", "-c", config)
    assert code == 0, err
    metrics = json.loads((tmp_path / "model" / "metrics.json").read_text())
    assert metrics["validation"]["accuracy"] > 0.8, metrics["validation"]


@pytest.mark.slow
def test_train_ner_on_conll_named_txt(tmp_path, cli, tiny_model):
    train = ncbi_disease(tmp_path / "train.txt", 80)
    config = tmp_path / "run.yaml"
    config.write_text(
        f"task: ner\nmodel:\n  name: {tiny_model}\n  max_length: 32\n"
        f"data:\n  train: {train}\ntrain:\n  epochs: 3\n  learning_rate: 3.0e-3\noutput_dir: {tmp_path / 'model'}\n"
    )
    code, out, err = cli("train", "ner", "-c", config)
    assert code == 0, err
    assert "read as CoNLL" in " ".join((out + err).split())
    info = json.loads((tmp_path / "model" / "bertkit.json").read_text())
    assert "B-Disease" in info["labels"]
    code, _, err = cli("evaluate", "-m", tmp_path / "model", "-d", train, "-o", tmp_path / "ev")
    assert code == 0, err


@pytest.mark.slow
def test_train_on_uci_style_txt_with_a_folder_of_label_files_for_validation(tmp_path, cli, tiny_model):
    """yelp_labelled.txt's layout (text<TAB>0|1, no header, .txt) for training, a folder of
    LABEL.txt files for validation, and a .dat test file whose format comes from its content."""
    rng = random.Random(11)
    lines = [f"{sentence(rng, 'positive' if i % 2 else 'negative')}\t{i % 2}" for i in range(240)]
    train = tmp_path / "yelp_labelled.txt"
    train.write_text("\n".join(lines) + "\n", encoding="utf-8")
    folder = tmp_path / "validation"
    folder.mkdir()
    for label, kind in (("1", "positive"), ("0", "negative")):
        (folder / f"{label}.txt").write_text("\n".join(sentence(rng, kind) for _ in range(20)) + "\n")
    test = tmp_path / "test.dat"
    test.write_text(
        "".join(
            json.dumps({"text": sentence(rng, k), "label": v}) + "\n"
            for k, v in [("positive", "1"), ("negative", "0")] * 10
        )
    )
    config = tmp_path / "run.yaml"
    config.write_text(
        f"task: classify\nmodel:\n  name: {tiny_model}\n  max_length: 32\n"
        f"data:\n  train: {{path: {train}, columns: [text, label]}}\n  validation: {folder}\n  test: {test}\n"
        f"train:\n  {RECIPE}\noutput_dir: {tmp_path / 'model'}\n"
    )
    code, out, err = cli("train", "classify", "-c", config)
    assert code == 0, err
    said = " ".join((out + err).split())
    assert (
        "read as tsv (every line has 2 tab-separated fields)" in said
        and "read as jsonl (every line is a JSON object)" in said
    )
    metrics = json.loads((tmp_path / "model" / "metrics.json").read_text())
    assert metrics["validation"]["accuracy"] > 0.8 and metrics["test"]["accuracy"] > 0.8, metrics


def test_a_txt_file_without_the_columns_names_the_format_it_was_read_as(tmp_path):
    path = tmp_path / "labelled.txt"
    path.write_text("Loved it.\t1\nHated it.\t0\n", encoding="utf-8")
    with pytest.raises(BertkitError) as err:
        splits_of(tmp_path, f"data:\n  train: {path}\n")
    assert "no column 'label'" in str(err.value) and "read as plain text lines" in str(err.value)
    assert "format: tsv, columns: [text, label]" in str(err.value)


def test_predict_input_joins_the_parts_a_record_has(tmp_path):
    from bertkit.core.data.readers import read_records

    path = tmp_path / "in.jsonl"
    path.write_text('{"title": "a", "description": "b"}\n{"title": "c"}\n{"description": "d"}\n{"other": 1}\n')
    got = [r.get("title + description") for r in read_records(str(path), text_column="title + description")]
    assert got == ["a b", "c", "d", None]  # the last has no part at all: predict names both fields


def test_utf_8_sig_is_an_encoding_that_reads_by_lines(tmp_path):
    """utf-8-sig writes a byte-order mark first, but a line break as one byte: it reads by lines."""
    pos, neg = tmp_path / "pos.txt", tmp_path / "neg.txt"
    pos.write_bytes("good caf\u00e9\n".encode("utf-8-sig") + "".join(f"good {i}\n" for i in range(9)).encode())
    neg.write_bytes("".join(f"bad {i}\n" for i in range(10)).encode())
    _, ds = splits_of(
        tmp_path, f"data:\n  train: {{files: {{positive: {pos}, negative: {neg}}}}}\n  encoding: utf-8-sig\n"
    )
    texts = list(ds["train"]["text"]) + list(ds["validation"]["text"])
    assert "good caf\u00e9" in texts and not any("\ufeff" in t for t in texts)


@pytest.mark.parametrize("problem, message", [("empty", "no examples in this file"), ("folder", "is a folder")])
def test_a_class_file_that_is_empty_or_a_folder_is_named(tmp_path, problem, message):
    pos, _ = rt_polarity(tmp_path)
    other = tmp_path / "other"
    other.mkdir() if problem == "folder" else other.write_text("\n  \n")
    with pytest.raises(BertkitError) as err:
        splits_of(
            tmp_path, f"data:\n  train:\n    files: {{positive: {pos}, negative: {other}}}\n  encoding: latin-1\n"
        )
    assert message in str(err.value) and "the file of class 'negative'" in str(err.value)


def test_gzip_data_under_a_name_that_does_not_say_so(tmp_path, capsys):
    import gzip

    train = tmp_path / "train"  # gzip bytes, no .gz
    train.write_bytes(gzip.compress(b"John B-PER\nlives O\n\nParis B-LOC\nrocks O\n\n" * 5))
    _, ds = splits_of(tmp_path, f"data:\n  train: {train}\n", task="ner")
    assert len(ds["train"]) + len(ds["validation"]) == 10
    assert "read as conll" in said(capsys)


def test_ner_plain_text_told_by_content_says_so(tmp_path):
    train = tmp_path / "train"
    train.write_text("hello world\nfoo bar\n")
    with pytest.raises(BertkitError) as err:
        splits_of(tmp_path, f"data:\n  train: {train}\n", task="ner")
    assert "read as plain text lines (from its content)" in str(err.value)


def test_columns_on_a_file_whose_records_name_their_fields(tmp_path):
    """data.columns names the CSV/TSV files of every split and leaves JSON lines alone; columns on a
    JSON lines source itself (or --columns for one) would be silently ignored: an error instead."""
    train = ag_news(tmp_path / "train.csv")
    validation = tmp_path / "validation.jsonl"
    validation.write_text(
        "".join(json.dumps({"label": str(1 + i % 2), "title": f"t{i}", "description": "d"}) + "\n" for i in range(6))
    )
    _, ds = splits_of(
        tmp_path,
        f"data:\n  train: {train}\n  validation: {validation}\n  columns: [label, title, description]\n"
        "  text_column: [title, description]\n",
    )
    assert ds["validation"]["title + description"][0] == "t0 d"
    with pytest.raises(BertkitError, match="column names were given .* read as jsonl"):
        splits_of(
            tmp_path,
            f"data:\n  train: {train}\n  columns: [label, title, description]\n"
            f"  validation: {{path: {validation}, columns: [label, title, description]}}\n"
            "  text_column: [title, description]\n",
        )

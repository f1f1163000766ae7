"""bertkit/core/data/: what training reads is checked as it is read, nothing silent. Labels that
are not finite or not the task's, keys and columns given twice, files of another task, blank
header lines and old Mac line breaks are errors naming the file, the line and the key; the
automatic validation split keeps every class."""

import json

import pytest
from helpers.checks import assert_refused

from bertkit.core.data import split_by_class
from bertkit.core.data.readers import read_records
from bertkit.core.errors import BertkitError


@pytest.fixture
def train(tmp_path, tiny_model, cli):
    """Run `bertkit train TASK` on a config with `data` lines; returns (code, err)."""

    def run(data: str, *args, task="classify", extra=""):
        config = tmp_path / "run.yaml"
        config.write_text(
            f"task: {task}\nmodel:\n  name: {tiny_model}\n  max_length: 32\ndata:\n{data}"
            f"train:\n  epochs: 1\n  max_steps: 2\noutput_dir: {tmp_path / 'out'}\n{extra}"
        )
        code, _, err = cli("train", task, "-c", config, *args)
        return code, err

    return run


# ---------------------------------------------------------------- config


# ---------------------------------------------------------------- readers


def test_duplicate_csv_columns_are_an_error(tmp_path):
    path = tmp_path / "d.csv"
    path.write_text("text,label,text\na,pos,b\n")
    with pytest.raises(BertkitError, match=r"d.csv:1: the header has 'text' twice \(columns 1 and 3\)"):
        list(read_records(str(path)))


def test_tsv_quotes_are_part_of_the_text(tmp_path):
    path = tmp_path / "d.tsv"
    path.write_text('text\tlabel\n"the film" was great\tpos\nsaid "no"\tneg\n"all of it"\tpos\n')
    assert [r["text"] for r in read_records(str(path))] == ['"the film" was great', 'said "no"', '"all of it"']


def test_an_unclosed_quote_is_reported_where_it_opens(tmp_path):
    path = tmp_path / "d.csv"
    path.write_text('text,label\ngood,pos\n"bad,neg\nfine,pos\nok,neg\n')
    with pytest.raises(BertkitError) as caught:
        list(read_records(str(path)))
    assert "d.csv:3:" in str(caught.value) and "quote" in str(caught.value)


def test_blank_lines_become_records_only_when_asked(tmp_path):
    path = tmp_path / "d.csv"
    path.write_text("text,label\na,pos\n\nb,neg\n")
    assert len(list(read_records(str(path)))) == 2
    kept = list(read_records(str(path), keep_blank=True))
    assert [r["text"] for r in kept] == ["a", "", "b"]


# ---------------------------------------------------------------- labels


@pytest.mark.parametrize("bad", ["nan", "inf", "-Infinity"])
def test_non_finite_labels_are_errors_with_their_line(train, tmp_path, bad):
    data = tmp_path / "scores.csv"
    rows = [f"text number {i},{0.5 + i / 10}" for i in range(30)]
    rows[7] = f"text number 7,{bad}"
    data.write_text("text,label\n" + "\n".join(rows) + "\n")
    code, err = train(f"  train: {data}\n")
    assert_refused(code, err, "scores.csv:9", "not a finite number")
    code, err = train(f"  train: {data}\n", "--set", "classify.problem_type=regression")
    assert_refused(code, err, "scores.csv:9", "not a finite number")
    assert not (tmp_path / "out").exists() and not (tmp_path / "out.partial").exists()


def test_label_errors_name_file_and_line(train, tmp_path):
    data = tmp_path / "d.csv"
    data.write_text("text,label\n" + "\n".join(f"t{i},{'pos' if i % 2 else 'neg'}" for i in range(30)) + "\nt,\n")
    code, err = train(f"  train: {data}\n")
    assert_refused(code, err, "d.csv:32", "empty 'label'")
    data.write_text("text,label\n" + "\n".join(f"t{i},{'pos' if i % 2 else 'neu'}" for i in range(30)) + "\n")
    code, err = train(f"  train: {data}\n  labels: [pos, neg]\n")
    assert_refused(code, err, "d.csv:2: label 'neu' is not in data.labels (pos, neg)")


@pytest.mark.slow
def test_ner_and_qa_files_given_to_a_classifier(train, tmp_path, cli, classify_bundle):
    conll = tmp_path / "d.conll"
    conll.write_text("Alice B-PER\nmet O\n\nBob B-PER\nleft O\n")
    code, err = train(f"  train: {conll}\n")
    assert_refused(code, err, "looks like NER data")
    code, _, err = cli("predict", "-m", classify_bundle, "-i", conll)
    assert_refused(code, err, "d.conll:1", "looks like NER data")
    squad = tmp_path / "q.jsonl"
    squad.write_text(json.dumps({"id": "1", "question": "who?", "context": "Alice met Bob."}) + "\n")
    code, _, err = cli("predict", "-m", classify_bundle, "-i", squad)
    assert_refused(code, err, "q.jsonl:1", "question-answering data")


@pytest.mark.slow
def test_a_rare_class_is_not_sent_wholly_to_validation(train, tmp_path):
    data = tmp_path / "d.csv"
    rows = [f"text {i},{'pos' if i % 2 else 'neg'}" for i in range(60)] + ["odd one,neutral", "odd two,neutral"]
    data.write_text("text,label\n" + "\n".join(rows) + "\n")
    for seed in range(5):
        code, err = train(f"  train: {data}\n", "--set", f"train.seed={seed}", "--overwrite")
        assert code == 0, err
        info = json.loads((tmp_path / "out" / "bertkit.json").read_text())
        assert info["labels"] == ["neg", "neutral", "pos"]


def test_split_by_class_keeps_the_share_of_each_class():
    classes = ["a"] * 90 + ["b"] * 9 + ["c"]
    kept, held = split_by_class(classes, 0.1, seed=3)
    assert len(held) == 10 and sorted(kept + held) == list(range(100))
    assert sum(classes[i] == "b" for i in held) == 1 and all(classes[i] != "c" for i in held)
    assert {classes[i] for i in kept} == {"a", "b", "c"}
    with pytest.raises(BertkitError, match="single example"):
        split_by_class(["a", "b", "c"], 0.5, seed=0)


# ---------------------------------------------------------------- fields that would be ignored


def test_ner_span_data_with_another_entities_key(cli, tmp_path, head_models):
    data = tmp_path / "spans.jsonl"
    data.write_text(json.dumps({"text": "Alice met Bob", "spans": [{"start": 0, "end": 5, "type": "PER"}]}) + "\n")
    code, _, err = cli("evaluate", "-m", head_models["ner"], "-d", data, "-o", tmp_path / "e")
    assert_refused(code, err, "spans.jsonl, record 1", "no 'entities' field", "ner.entities_field")
    data.write_text(json.dumps({"text": "Alice met Bob", "entities": []}) + "\n")
    code, _, err = cli("evaluate", "-m", head_models["ner"], "-d", data, "-o", tmp_path / "e")
    assert_refused(code, err, "no entities at all")
    assert not (tmp_path / "e").exists()


def test_qa_records_with_another_answers_key(train, tmp_path):
    data = tmp_path / "qa.jsonl"
    rows = [{"id": str(i), "question": "which?", "context": "a b c", "answer": {"text": ["b"]}} for i in range(20)]
    data.write_text("".join(json.dumps(r) + "\n" for r in rows))
    code, err = train(f"  train: {data}\n", task="qa")
    assert_refused(code, err, "qa.jsonl, record 1", "no 'answers' field", "qa.answers_field")


@pytest.mark.parametrize("bad", ["1e999", "-1E400", "9" * 400])
def test_labels_that_overflow_to_infinity_are_errors(train, tmp_path, bad):
    """float('1e999') is inf: such a label made a regression file look like classification, with
    one class per score."""
    for suffix, sep in ((".csv", ","), (".tsv", "\t")):
        data = tmp_path / f"scores{suffix}"
        rows = [f"text number {i}{sep}{0.5 + i / 10}" for i in range(30)]
        rows[7] = f"text number 7{sep}{bad}"
        data.write_text(f"text{sep}label\n" + "\n".join(rows) + "\n")
        code, err = train(f"  train: {data}\n")
        assert_refused(code, err, f"scores{suffix}:9", "not a finite number")
    assert not (tmp_path / "out").exists()


def test_non_finite_labels_in_parquet_and_json_lines(train, tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    data = tmp_path / "scores.parquet"
    labels = [str(0.5 + i / 10) for i in range(30)]
    labels[3] = "1e999"
    pq.write_table(pa.table({"text": [f"t {i}" for i in range(30)], "label": labels}), data)
    code, err = train(f"  train: {data}\n")
    assert_refused(code, err, "scores.parquet, row 4", "not a finite number")
    lines = tmp_path / "scores.jsonl"
    records = [{"text": f"t {i}", "label": 0.5 + i / 10} for i in range(30)]
    text = "\n".join(json.dumps(r) for r in records).splitlines()
    text[4] = '{"text": "t 4", "label": ' + "1" * 400 + "}"  # too large for any number type
    text[6] = '{"text": "t 6", "label": "nan"}'
    lines.write_text("\n".join(text) + "\n")
    code, err = train(f"  train: {lines}\n")
    assert_refused(code, err, "scores.jsonl:5", "too large")
    text[4] = '{"text": "t 4", "label": 1.5}'
    lines.write_text("\n".join(text) + "\n")
    code, err = train(f"  train: {lines}\n")
    assert_refused(code, err, "scores.jsonl:7", "'label' holds text ('nan')", "earlier records hold a number")


def test_each_label_of_a_multi_label_example_is_checked(train, tmp_path):
    data = tmp_path / "tags.csv"
    rows = [f"text {i},{'a|b' if i % 2 else 'b'}" for i in range(30)] + ["text x,a|NaN"]
    data.write_text("text,label\n" + "\n".join(rows) + "\n")
    code, err = train(f"  train: {data}\n  label_separator: '|'\n")
    assert_refused(code, err, "tags.csv:32", "'NaN', not a finite number")


def test_a_json_key_given_twice_is_an_error(tmp_path):
    """JSON readers keep the last of two equal keys: `{"text": A, "text": B}` would be read as B."""
    from bertkit.core.data.readers import read_records

    lines = tmp_path / "in.jsonl"
    lines.write_text('{"text": "fine"}\n{"text": "great film", "text": "awful"}\n')
    with pytest.raises(BertkitError, match=r"in\.jsonl:2: the key 'text' appears twice"):
        list(read_records(str(lines)))
    document = tmp_path / "in.json"
    document.write_text('[{"text": "a", "label": "pos", "label": "neg"}]')
    with pytest.raises(BertkitError, match=r"in\.json: the key 'label' appears twice"):
        list(read_records(str(document)))
    nested = tmp_path / "spans.jsonl"
    nested.write_text('{"text": "x", "entities": [{"start": 0, "end": 1, "type": "A", "type": "B"}]}\n')
    with pytest.raises(BertkitError, match=r"spans\.jsonl:1: the key 'type' appears twice"):
        list(read_records(str(nested)))


def test_a_parquet_column_given_twice_is_an_error(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    from bertkit.core.data.readers import read_records

    path = tmp_path / "in.parquet"
    table = pa.Table.from_arrays([pa.array(["great film"]), pa.array(["awful"])], names=["text", "text"])
    pq.write_table(table, path)
    with pytest.raises(BertkitError, match=r"in\.parquet: the file has 'text' twice"):
        list(read_records(str(path)))


def test_a_csv_whose_header_line_is_blank_is_an_error_not_a_shift(tmp_path):
    import pytest

    from bertkit.core.data.readers import located_records
    from bertkit.core.errors import BertkitError

    path = tmp_path / "in.csv"
    path.write_text("\ntext\nhello\n")
    with pytest.raises(BertkitError, match="in.csv:1: the header line is blank"):
        list(located_records(str(path), keep_blank=True))


def test_old_mac_line_breaks_are_an_error_not_one_record(cli, tmp_path, head_models):
    from helpers.checks import assert_refused

    from bertkit.core.data.readers import located_records

    mac = tmp_path / "mac.txt"
    mac.write_bytes(b"great film\rawful film\rfine film\r")
    code, _, err = cli("predict", "-m", head_models["ner"], "-i", mac)
    assert_refused(code, err, "carriage return alone (old Mac line breaks)")
    inside = tmp_path / "inside.txt"
    inside.write_bytes(b"a lone \r inside\nsecond\n")
    assert [r["text"] for _, r in located_records(str(inside))] == ["a lone \r inside", "second"]
    squad = tmp_path / "mac.json"
    squad.write_bytes(b'{"data": [\r{"text": "a"}\r]}')
    assert [r["text"] for _, r in located_records(str(squad))] == ["a"]  # JSON: a CR is only white space

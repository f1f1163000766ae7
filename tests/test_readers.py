import gzip
import json

import pytest

from bertkit.core.data.formats import detect_format
from bertkit.core.data.readers import count_records, read_records
from bertkit.core.errors import BertkitError


def test_formats_from_extension(tmp_path):
    assert detect_format("a.csv") == "csv"
    assert detect_format("a.TSV") == "tsv"
    assert detect_format("a.jsonl.gz") == "jsonl"
    assert detect_format("a.txt") == "text"
    assert detect_format(str(tmp_path)) == "folder"
    assert detect_format("a.dat", "tsv") == "tsv"
    with pytest.raises(BertkitError, match="cannot tell the format"):
        detect_format("a.dat")
    with pytest.raises(BertkitError, match="unknown data format"):
        detect_format("a.csv", "xml")


def test_csv_with_quotes_and_commas(tmp_path):
    path = tmp_path / "d.csv"
    path.write_text('text,label\n"good, really ""good""",pos\nbad,neg\n', encoding="utf-8")
    assert list(read_records(str(path))) == [
        {"text": 'good, really "good"', "label": "pos"},
        {"text": "bad", "label": "neg"},
    ]
    assert count_records(str(path)) == 2


def test_tsv(tmp_path):
    path = tmp_path / "d.tsv"
    path.write_text("text\tlabel\nit works\t1\n")
    assert list(read_records(str(path))) == [{"text": "it works", "label": "1"}]


def test_malformed_csv_row_names_line(tmp_path):
    path = tmp_path / "d.csv"
    path.write_text("text,label\nfine,pos\nnot, fine, at all,neg\n")
    with pytest.raises(BertkitError, match=rf"{path}:3: expected 2 fields"):
        list(read_records(str(path)))


def test_jsonl_plain_and_gzip(tmp_path):
    rows = [{"text": "a", "label": 1}, {"text": "b", "label": 0}]
    plain = tmp_path / "d.jsonl"
    plain.write_text("\n".join(json.dumps(r) for r in rows) + "\n\n")
    packed = tmp_path / "d.jsonl.gz"
    with gzip.open(packed, "wt") as handle:
        handle.write("\n".join(json.dumps(r) for r in rows))
    assert list(read_records(str(plain))) == rows
    assert list(read_records(str(packed))) == rows


def test_malformed_jsonl_names_line(tmp_path):
    path = tmp_path / "d.jsonl"
    path.write_text('{"text": "a"}\n{"text": "b",}\n')
    with pytest.raises(BertkitError, match=rf"{path}:2: not valid JSON"):
        list(read_records(str(path)))


def test_json_list_and_wrapped(tmp_path):
    path = tmp_path / "d.json"
    path.write_text(json.dumps([{"text": "a"}]))
    assert list(read_records(str(path))) == [{"text": "a"}]
    path.write_text(json.dumps({"version": 1, "data": [{"text": "b"}]}))
    assert list(read_records(str(path))) == [{"text": "b"}]


def test_parquet(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = tmp_path / "d.parquet"
    pq.write_table(pa.table({"text": ["x", "y"], "label": [1, 0]}), path)
    assert list(read_records(str(path))) == [{"text": "x", "label": 1}, {"text": "y", "label": 0}]


def test_text_lines_skip_blanks(tmp_path):
    path = tmp_path / "d.txt"
    path.write_text("one\n\ntwo\r\n")
    assert list(read_records(str(path), text_column="review")) == [{"review": "one"}, {"review": "two"}]


def test_folder_per_class(tmp_path):
    for label, texts in {"neg": ["bad<br />film"], "pos": ["good", "great"]}.items():
        (tmp_path / label).mkdir()
        for i, text in enumerate(texts):
            (tmp_path / label / f"{i}.txt").write_text(text)
    records = list(read_records(str(tmp_path)))
    assert [(r["text"], r["label"]) for r in records] == [("bad<br />film", "neg"), ("good", "pos"), ("great", "pos")]


def test_non_utf8_names_line(tmp_path):
    path = tmp_path / "d.txt"
    path.write_bytes("fine\nalso fine\ncaf\xe9\n".encode("latin-1"))
    with pytest.raises(BertkitError, match=rf"{path}:3: not UTF-8"):
        list(read_records(str(path)))


def test_missing_file():
    with pytest.raises(BertkitError, match="data file not found"):
        list(read_records("nowhere.csv"))


@pytest.mark.parametrize("value", [["quokka"], {"x": "wombat"}, True])
def test_corpus_lines_refuse_a_text_that_is_not_text(tmp_path, value):
    """tokenizer train, model tiny --vocab-from and mlm-adapt read a list, an object or true as
    its Python spelling ("['quokka']"), learning brackets and quotes; predict refused the record."""
    from bertkit.core.data.corpus import read_lines

    path = tmp_path / "corpus.jsonl"
    path.write_text(json.dumps({"text": "zebra"}) + "\n" + json.dumps({"text": value}) + "\n")
    with pytest.raises(BertkitError, match=rf"{path}:2: 'text' holds a .*, not text"):
        list(read_lines(str(path)))

"""Outputs stay aligned with their input line for line: a blank line (or an empty text) gets a
result of its own, marked empty, in every command that reads lines."""

import csv
import io
import json

import numpy as np
import pytest

LINES = ["great film", "", "awful film", "   ", "lovely book"]


def write_lines(path, lines=LINES):
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.mark.slow
def test_predict_keeps_blank_lines_in_every_format(cli, tmp_path, classify_bundle):
    source = write_lines(tmp_path / "in.txt")
    code, out, err = cli("predict", "-m", classify_bundle, "-i", source)
    assert code == 0, err
    rows = [json.loads(line) for line in out.splitlines()]
    assert [r["text"] for r in rows] == LINES
    assert [bool(r.get("empty")) for r in rows] == [False, True, False, True, False]
    assert rows[1]["label"] is None and rows[1]["score"] is None and set(rows[1]["scores"]) == {"negative", "positive"}
    assert rows[0]["label"] in ("positive", "negative")
    target = tmp_path / "out.csv"
    assert cli("predict", "-m", classify_bundle, "-i", source, "-o", target)[0] == 0
    table = list(csv.DictReader(io.StringIO(target.read_text())))
    assert len(table) == 5 and table[1]["label"] == "" and table[2]["label"] in ("positive", "negative")
    records = tmp_path / "in.jsonl"
    records.write_text('{"id": 1, "text": "great"}\n\n{"id": 3, "text": null}\n{"id": 4, "text": "awful"}\n')
    code, out, err = cli("predict", "-m", classify_bundle, "-i", records)
    rows = [json.loads(line) for line in out.splitlines()]
    assert code == 0 and [r.get("id") for r in rows] == [1, None, 3, 4]
    assert [bool(r.get("empty")) for r in rows] == [False, True, True, False]


def test_predict_other_tasks_keep_blank_lines(cli, tmp_path, head_models):
    source = write_lines(tmp_path / "in.txt", ["alice met bruno", "", "in kyoto"])
    code, out, err = cli("predict", "-m", head_models["ner"], "-i", source)
    rows = [json.loads(line) for line in out.splitlines()]
    assert code == 0 and [r["text"] for r in rows] == ["alice met bruno", "", "in kyoto"], err
    assert rows[1] == {"text": "", "entities": [], "empty": True}
    masked = write_lines(tmp_path / "masked.txt", ["the [MASK] was great", "", "a [MASK] film"])
    code, out, err = cli("predict", "-m", head_models["mlm"], "-i", masked)
    rows = [json.loads(line) for line in out.splitlines()]
    assert code == 0 and len(rows) == 3 and rows[1]["empty"] and rows[1]["masks"] == [] and rows[2]["masks"], err
    questions = tmp_path / "q.jsonl"
    questions.write_text(
        json.dumps({"id": "a", "question": "which place ?", "context": "alice met bruno in kyoto"})
        + "\n\n"
        + json.dumps({"id": "c", "question": "who ?", "context": "bruno left"})
        + "\n"
    )
    code, out, err = cli("predict", "-m", head_models["qa"], "-i", questions)
    rows = [json.loads(line) for line in out.splitlines()]
    assert code == 0 and [r.get("id") for r in rows] == ["a", None, "c"], err
    assert rows[1]["empty"] and rows[1]["answer"] is None and rows[2]["answer"]


def test_embed_gives_every_line_a_row(cli, tmp_path, tiny_model):
    source = write_lines(tmp_path / "in.txt")
    for name in ("v.npy", "v.jsonl", "v.parquet"):
        code, _, err = cli("embed", "-m", tiny_model, "-i", source, "-o", tmp_path / name)
        assert code == 0, err
    vectors = np.load(tmp_path / "v.npy")
    assert vectors.shape[0] == 5
    assert not vectors[1].any() and not vectors[3].any() and vectors[0].any() and vectors[4].any()
    rows = [json.loads(line) for line in (tmp_path / "v.jsonl").read_text().splitlines()]
    assert [bool(r.get("empty")) for r in rows] == [False, True, False, True, False]
    import pyarrow.parquet as pq

    assert pq.read_table(tmp_path / "v.parquet").num_rows == 5


def test_search_hits_are_line_positions_and_blank_queries_get_none(cli, tmp_path, tiny_model):
    corpus = write_lines(tmp_path / "corpus.txt", ["", "the film was great", "", "", "a lovely book", ""])
    queries = write_lines(tmp_path / "queries.txt", ["great film", "", "lovely book"])
    code, out, err = cli("search", "-m", tiny_model, "--corpus", corpus, "--queries", queries, "-k", "5", "--no-cache")
    assert code == 0, err
    rows = [json.loads(line) for line in out.splitlines()]
    assert len(rows) == 3 and rows[1] == {"query": "", "hits": [], "empty": True}
    lines = corpus.read_text().splitlines()
    for row in (rows[0], rows[2]):
        assert sorted(h["index"] for h in row["hits"]) == [1, 4]  # only the two texts, at their lines
        assert all(lines[h["index"]] == h["text"] for h in row["hits"])


def test_similarity_and_tokenize_keep_blank_lines(cli, tmp_path, tiny_model):
    pairs = tmp_path / "pairs.csv"
    pairs.write_text("text,text_pair\ngreat film,lovely film\n\nawful,\n")
    code, out, err = cli("similarity", "-m", tiny_model, "-i", pairs)
    rows = [json.loads(line) for line in out.splitlines()]
    assert code == 0 and len(rows) == 3, err
    assert isinstance(rows[0]["score"], float) and rows[1]["score"] is None and rows[2]["score"] is None
    texts = write_lines(tmp_path / "texts.txt", ["great film", "", "awful film"])
    code, out, err = cli("similarity", "-m", tiny_model, "-i", texts, "--matrix", "--heatmap", tmp_path / "h" / "m.png")
    rows = [json.loads(line) for line in out.splitlines()]
    assert code == 0 and rows[1]["empty"] and rows[1]["scores"] == [None, None, None], err
    assert rows[0]["scores"][1] is None and rows[0]["scores"][2] is not None
    assert (tmp_path / "h" / "m.png").stat().st_size > 0
    code, _, err = cli("similarity", "-m", tiny_model, "-i", texts, "--matrix", "-o", tmp_path / "m.csv")
    cells = [line.split(",") for line in (tmp_path / "m.csv").read_text().splitlines()]
    assert code == 0 and "None" not in (tmp_path / "m.csv").read_text(), err  # a null is an empty cell
    assert cells[2][2] == "||" and cells[1][2].split("|")[1] == ""
    code, out, err = cli("tokenize", "-m", tiny_model, "-i", texts, "--json")
    rows = [json.loads(line) for line in out.splitlines()]
    assert code == 0 and [r["text"] for r in rows] == ["great film", "", "awful film"] and rows[1]["tokens"] == []

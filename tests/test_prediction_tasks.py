"""Each task's predictions stay aligned with its input, whatever its kind (text, token lists,
question records), and a record it cannot read is refused with its file and line."""

import csv
import io
import json

import pytest
from helpers.checks import assert_refused, write_config


def jsonl(path, *records):
    """Write records (a None is a blank line) as JSON lines."""
    path.write_text("".join(("" if r is None else json.dumps(r)) + "\n" for r in records))
    return path


def rows_of(out: str) -> list[dict]:
    return [json.loads(line) for line in out.splitlines()]


def sentences(conll: str) -> list[list[str]]:
    """The tokens of each sentence of CoNLL output: its token lines up to the blank line that
    ends it (an empty sentence is that blank line alone)."""
    found, current = [], []
    for line in conll.splitlines():
        if line:
            current.append(line.split()[0])
        else:
            found.append(current)
            current = []
    assert not current, "the last sentence is not ended by a blank line"
    return found


# ---------------------------------------------------------------- QA


def test_qa_records_without_question_or_context_are_refused_with_their_line(cli, tmp_path, head_models):
    source = jsonl(tmp_path / "plain.jsonl", {"text": "alice met bruno"}, {"text": "in kyoto"})
    code, out, err = cli("predict", "-m", head_models["qa"], "-i", source)
    assert_refused(code, err, f"{source}:1: no 'question' field")
    assert out == ""
    half = jsonl(
        tmp_path / "half.jsonl",
        {"question": "who ?", "context": "bruno left"},
        None,
        {"question": "where ?"},
    )
    assert_refused(*cli("predict", "-m", head_models["qa"], "-i", half)[::2], f"{half}:3: no 'context' field")
    twice = jsonl(
        tmp_path / "twice.jsonl",
        {"id": "a", "question": "who ?", "context": "bruno left"},
        {"id": "a", "question": "who ?", "context": "alice came"},
    )
    code, _, err = cli("predict", "-m", head_models["qa"], "-i", twice)
    assert_refused(code, err, f"{twice}:2: question id 'a' is used twice (first at {twice}:1)")
    empty_context = jsonl(tmp_path / "nocontext.jsonl", {"question": "who ?", "context": " "})
    assert_refused(*cli("predict", "-m", head_models["qa"], "-i", empty_context)[::2], f"{empty_context}:1:")


def test_qa_blank_and_whitespace_records_are_empty(cli, tmp_path, head_models):
    source = jsonl(
        tmp_path / "q.jsonl",
        None,
        {"id": "b", "question": "  ", "context": ""},
        {"id": "c", "question": "who ?", "context": "bruno left"},
    )
    code, out, err = cli("predict", "-m", head_models["qa"], "-i", source)
    rows = rows_of(out)
    assert code == 0 and [r.get("id") for r in rows] == [None, "b", "c"], err
    assert [bool(r.get("empty")) for r in rows] == [True, True, False]
    assert rows[1] == {"id": "b", "answer": None, "score": None, "start": None, "end": None, "empty": True}


def test_qa_context_file_that_is_missing_or_not_a_file_is_refused(cli, tmp_path, head_models):
    code, _, err = cli("predict", "-m", head_models["qa"], "-q", "who ?", "--context-file", tmp_path / "nope.txt")
    assert_refused(code, err, f"--context-file {tmp_path / 'nope.txt'}: no such file")
    code, _, err = cli("predict", "-m", head_models["qa"], "-q", "who ?", "--context-file", tmp_path)
    assert_refused(code, err, f"--context-file {tmp_path} is a directory")
    code, _, err = cli("predict", "-m", head_models["qa"], "-q", "who ?")
    assert_refused(code, err, "--question and --context-file go together")


# ---------------------------------------------------------------- NER


def test_ner_blank_lines_in_token_input_get_token_shaped_results(cli, tmp_path, head_models):
    source = jsonl(tmp_path / "tokens.jsonl", None, {"tokens": ["alice", "met", "bruno"]}, None, {"tokens": ["kyoto"]})
    code, out, err = cli("predict", "-m", head_models["ner"], "-i", source)
    rows = rows_of(out)
    assert code == 0 and len(rows) == 4, err
    assert rows[0] == rows[2] == {"tokens": [], "tags": [], "empty": True}
    assert rows[1]["tokens"] == ["alice", "met", "bruno"] and len(rows[1]["tags"]) == 3
    target = tmp_path / "out.conll"
    code, _, err = cli("predict", "-m", head_models["ner"], "-i", source, "-f", "conll", "-o", target)
    assert code == 0, err
    assert sentences(target.read_text()) == [[], ["alice", "met", "bruno"], [], ["kyoto"]]


def test_ner_all_blank_input_with_conll_output_gives_empty_sentences(cli, tmp_path, head_models):
    source = tmp_path / "blank.jsonl"
    source.write_text("\n\n")
    target = tmp_path / "out.conll"
    code, _, err = cli("predict", "-m", head_models["ner"], "-i", source, "-f", "conll", "-o", target)
    assert code == 0, err
    assert target.read_text() == "\n\n" and sentences(target.read_text()) == [[], []]
    code, out, err = cli("predict", "-m", head_models["ner"], "-i", source)
    assert code == 0 and rows_of(out) == [{"text": "", "entities": [], "empty": True}] * 2, err


def test_ner_conll_input_with_docstart_and_extra_blank_lines(cli, tmp_path, head_models):
    source = tmp_path / "in.conll"
    source.write_text("-DOCSTART- O\n\nalice B-PER\nmet O\n\n\n\nkyoto B-LOC\n\n-DOCSTART- O\n\nbruno B-PER\n")
    target = tmp_path / "out.conll"
    code, _, err = cli("predict", "-m", head_models["ner"], "-i", source, "-o", target)
    assert code == 0, err
    # document markers and runs of blank lines between sentences are not sentences: no result
    assert sentences(target.read_text()) == [["alice", "met"], ["kyoto"], ["bruno"]]
    assert all(len(line.split()) in (0, 3) for line in target.read_text().splitlines())


def test_ner_record_without_text_or_tokens_names_its_line(cli, tmp_path, head_models):
    source = jsonl(tmp_path / "in.jsonl", {"text": "alice met bruno"}, {"sentence": "in kyoto"})
    code, _, err = cli("predict", "-m", head_models["ner"], "-i", source)
    assert_refused(code, err, f"{source}:2: no 'text' or 'tokens' field", "--text-column")


# ---------------------------------------------------------------- fill-mask and classify messages


def test_fill_mask_errors_name_file_and_line(cli, tmp_path, head_models):
    source = tmp_path / "masked.txt"
    source.write_text("the [MASK] was great\n\nno mask here\n")
    code, _, err = cli("predict", "-m", head_models["mlm"], "-i", source)
    assert_refused(code, err, f"{source}:3: no [MASK] in 'no mask here'")
    records = jsonl(tmp_path / "masked.jsonl", {"text": "a [MASK] film"}, {"sentence": "the [MASK]"})
    code, _, err = cli("predict", "-m", head_models["mlm"], "-i", records)
    assert_refused(code, err, f"{records}:2: no 'text' field", "--text-column")


def test_span_ner_data_given_to_the_classifier_is_recognised(cli, tmp_path, tiny_model, ner_data):
    config = write_config(tmp_path, tiny_model, ner_data["spans"])
    code, _, err = cli("train", "classify", "-c", config)
    assert_refused(code, err, "no column 'label'", "This looks like NER data")


# ---------------------------------------------------------------- CSV / TSV columns


def table(path, fmt: str) -> list[list[str]]:
    text = path.read_text()
    if fmt == "csv":
        return list(csv.reader(io.StringIO(text)))
    return [line.split("\t") for line in text.splitlines()]


@pytest.mark.slow
def test_csv_and_tsv_columns_do_not_depend_on_the_first_record(cli, tmp_path, classify_bundle):
    first = jsonl(tmp_path / "first.jsonl", None, {"id": 2, "text": "great film"}, {"id": 3, "text": "awful"})
    later = jsonl(tmp_path / "later.jsonl", {"id": 1, "text": "great film"}, None, {"id": 3, "text": "awful"})
    for fmt in ("csv", "tsv"):
        headers = []
        for source in (first, later):
            target = tmp_path / f"{source.stem}.{fmt}"
            code, _, err = cli("predict", "-m", classify_bundle, "-i", source, "-o", target)
            assert code == 0, err
            rows = table(target, fmt)
            assert len(rows) == 4 and all(len(r) == len(rows[0]) for r in rows), rows
            header = rows[0]
            headers.append(header)
            assert header[0] == "id" and header[-1] == "empty", header
            by_name = [dict(zip(header, r, strict=True)) for r in rows[1:]]
            blank = 0 if source is first else 1
            assert [r["empty"] for r in by_name] == ["true" if i == blank else "false" for i in range(3)]
            assert by_name[blank]["label"] == "" and by_name[blank]["id"] == ""
            assert by_name[2]["id"] == "3" and by_name[2]["label"] in ("positive", "negative")
        assert headers[0] == headers[1]


def test_csv_keeps_fields_that_only_later_records_have(cli, tmp_path, head_models):
    source = jsonl(
        tmp_path / "q.jsonl",
        {"question": "who ?", "context": "bruno left"},
        {"id": "b", "question": "where ?", "context": "alice met bruno in kyoto"},
    )
    target = tmp_path / "out.csv"
    code, _, err = cli("predict", "-m", head_models["qa"], "-i", source, "-o", target)
    assert code == 0, err
    rows = list(csv.DictReader(io.StringIO(target.read_text())))
    assert [r["id"] for r in rows] == ["", "b"] and [r["empty"] for r in rows] == ["false", "false"]


@pytest.mark.slow
def test_a_text_field_that_is_not_text_is_refused_in_every_task(cli, tmp_path, head_models, classify_bundle):
    """A list or a mapping where the text belongs is an error naming its line, not its Python
    spelling (`['a']`) run through the model; a number is written out as text, as CSV has it."""
    source = tmp_path / "in.jsonl"
    source.write_text('{"text": "fine [MASK] words"}\n{"text": "42 [MASK]"}\n{"text": ["a", "list"]}\n')
    for model in (classify_bundle, head_models["ner"], head_models["mlm"]):
        code, _, err = cli("predict", "-m", model, "-i", source)
        assert_refused(code, err, f"{source}:3: 'text' holds a list, not text")
    code, _, err = cli("embed", "-m", classify_bundle, "-i", source, "-o", tmp_path / "v.npy")
    assert_refused(code, err, f"{source}:3: 'text' holds a list, not text")
    questions = tmp_path / "q.jsonl"
    questions.write_text('{"question": {"a": 1}, "context": "some words"}\n')
    code, _, err = cli("predict", "-m", head_models["qa"], "-i", questions)
    assert_refused(code, err, f"{questions}:1: 'question' holds a JSON object, not text")
    numbers = tmp_path / "numbers.jsonl"
    numbers.write_text('{"text": 42}\n')
    code, out, err = cli("predict", "-m", classify_bundle, "-i", numbers)
    assert code == 0 and json.loads(out)["label"] is not None, err

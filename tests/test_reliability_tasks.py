"""Each task's predictions stay aligned with its input, whatever its kind (text, token lists,
question records), and a record it cannot read is refused with its file and line."""

import json

from checks import assert_refused


def jsonl(path, *records):
    """Write records (a None is a blank line) as JSON lines."""
    path.write_text("".join(("" if r is None else json.dumps(r)) + "\n" for r in records))
    return path


def rows_of(out: str) -> list[dict]:
    return [json.loads(line) for line in out.splitlines()]


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

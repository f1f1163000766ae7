"""Offsets and tokens as the commands write them: what a user reads back from the output points
at the characters and tokens of the input as it is stored."""

import json


def test_qa_context_file_offsets_count_its_own_characters(cli, tmp_path, head_models):
    """A CR LF (Windows) or lone CR context file: `start`/`end` index the file's characters as
    stored, and the answer is that text (reading it with newline translation shifted every
    span after a line break by one character a line)."""
    context = tmp_path / "windows.txt"
    lines = ["alice met bruno", "rossi in kyoto", "then paris", "and riga with hana", "the end"]
    context.write_bytes(("\r\n".join(lines) + "\r\n" + "lima\roslo\r\n").encode("utf-8"))
    code, out, err = cli(
        "predict", "-m", head_models["qa"], "-q", "which place ?", "--context-file", context, "--n-best", "20"
    )
    assert code == 0, err
    found = json.loads(out.strip().splitlines()[-1])
    with open(context, encoding="utf-8", newline="") as handle:
        stored = handle.read()
    spans = [found, *found["alternatives"]]
    for span in spans:
        assert stored[span["start"] : span["end"]] == span["answer"], span
    assert any(span["start"] > stored.index("\r\n") for span in spans)  # spans after a line break were checked


def test_asked_question_keeps_the_line_breaks_of_the_context_file(tmp_path):
    from bertkit.prediction import asked_question

    context = tmp_path / "c.txt"
    context.write_bytes("\ufeffone\r\ntwo\rthree\n".encode())
    ((record),) = asked_question("q ?", context)
    assert record["context"] == "\ufeffone\r\ntwo\rthree\n"


def test_ner_conll_output_refuses_tokens_a_conll_line_cannot_carry(cli, tmp_path, head_models):
    """Token JSON whose tokens are empty or hold white space: JSON lines carry them (one tag
    each); a CoNLL output would lose a token, add a column or cut a sentence in two, so it is
    refused, naming the record and the token, and nothing is written."""
    from helpers.checks import assert_refused

    from bertkit.core.data.conll import read_conll

    source = tmp_path / "tokens.jsonl"
    fine = {"tokens": ["alice", "\u00ad", "met", "bruno"]}
    for bad in (["new york"], ["\n"], [""], ["\u3000"]):
        source.write_text(json.dumps(fine) + "\n" + json.dumps({"tokens": ["kyoto", *bad]}) + "\n", encoding="utf-8")
        code, out, err = cli("predict", "-m", head_models["ner"], "-i", source)
        assert code == 0, err
        assert [len(json.loads(line)["tags"]) for line in out.splitlines()] == [4, 2]
        target = tmp_path / "out.conll"
        code, _, err = cli("predict", "-m", head_models["ner"], "-i", source, "-o", target)
        assert_refused(
            code, err, f"{source}:2: token 2 ({bad[0]!r}) cannot be written as a CoNLL row", "--format jsonl"
        )
        assert not target.exists()
    source.write_text(json.dumps(fine) + "\n", encoding="utf-8")
    code, _, err = cli("predict", "-m", head_models["ner"], "-i", source, "-o", target)
    assert code == 0, err
    assert [r["tokens"] for r in read_conll(str(target), 0, -1)] == [fine["tokens"]]

"""The edges of the reliability promises, found by an adversarial pass: labels that overflow to
infinity, JSON keys and Parquet columns given twice, a run folder bertkit did not make, output
paths that are the root or a symbolic-link loop, YAML keys that are not names, line separators
inside JSON lines output, and tokens that CoNLL rows cannot carry."""

import json

import pytest
from helpers.checks import assert_refused

from bertkit.core.errors import BertkitError

# ---------------------------------------------------------------- labels that are not finite


@pytest.fixture
def train(tmp_path, tiny_model, cli):
    """Run `bertkit train classify` on a config with `data` lines (refused before any step)."""

    def run(data: str, *args):
        config = tmp_path / "run.yaml"
        config.write_text(
            f"task: classify\nmodel:\n  name: {tiny_model}\n  max_length: 32\ndata:\n{data}"
            f"train:\n  epochs: 1\n  max_steps: 2\noutput_dir: {tmp_path / 'out'}\n"
        )
        code, _, err = cli("train", "classify", "-c", config, *args)
        return code, err

    return run


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


# ---------------------------------------------------------------- fields given twice


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


# ---------------------------------------------------------------- a run folder that is not a run's


def test_a_partial_folder_a_run_did_not_make_is_never_cleared(tmp_path):
    """`OUT.partial` without bertkit's run marker is someone else's (another trainer's output, say):
    its `checkpoint-500/` and `runs/` are not a run's debris, with or without --overwrite or --resume."""
    from bertkit.training.run_dir import check_dirs

    final, work = tmp_path / "out", tmp_path / "out.partial"
    (work / "checkpoint-500").mkdir(parents=True)
    (work / "checkpoint-500" / "weights.bin").write_text("mine")
    (work / "runs").mkdir()
    (work / "runs" / "events.out.tfevents.1").write_text("mine")
    for overwrite in (False, True):
        with pytest.raises(BertkitError, match="holds files bertkit did not write"):
            check_dirs(final, work, overwrite, False, [])
    with pytest.raises(BertkitError, match="was not made by a bertkit run"):
        check_dirs(final, work, False, True, [])
    assert (work / "checkpoint-500" / "weights.bin").read_text() == "mine"
    assert (work / "runs" / "events.out.tfevents.1").read_text() == "mine"
    (work / "checkpoint-500" / "weights.bin").unlink()
    (work / "checkpoint-500").rmdir()
    (work / "runs" / "events.out.tfevents.1").unlink()
    (work / "runs").rmdir()
    assert check_dirs(final, work, False, False, []) is None  # an empty folder is nobody's work
    assert not work.exists()


def test_a_partial_folder_that_is_a_link_is_refused(tmp_path):
    from bertkit.training.run_dir import check_dirs

    mine = tmp_path / "mine"
    (mine / "runs").mkdir(parents=True)
    (mine / "runs" / "notes.txt").write_text("mine")
    (tmp_path / "out.partial").symlink_to(mine)
    for overwrite, resume in ((False, False), (True, False), (False, True)):
        with pytest.raises(BertkitError, match="is a symbolic link"):
            check_dirs(tmp_path / "out", tmp_path / "out.partial", overwrite, resume, [])
    assert (mine / "runs" / "notes.txt").read_text() == "mine"


# ---------------------------------------------------------------- output paths


def test_the_root_as_output_directory_is_a_clean_error(cli, tmp_path, tiny_model, easy_data):
    config = tmp_path / "run.yaml"
    config.write_text(
        f"task: classify\nmodel:\n  name: {tiny_model}\ndata:\n  train: {easy_data['train']}\noutput_dir: out\n"
    )
    for extra in ((), ("--overwrite",)):
        code, _, err = cli("train", "classify", "-c", config, "-o", "/", *extra)
        assert_refused(code, err, "/ is the root")


def test_a_symbolic_link_loop_as_output_is_a_clean_error(cli, tmp_path, head_models):
    from bertkit.core.outputs import atomic_text, check_output_dir

    (tmp_path / "a.jsonl").symlink_to(tmp_path / "b.jsonl")
    (tmp_path / "b.jsonl").symlink_to(tmp_path / "a.jsonl")
    texts = tmp_path / "in.txt"
    texts.write_text("alice met bruno\n")
    code, _, err = cli("predict", "-m", head_models["ner"], "-i", texts, "-o", tmp_path / "a.jsonl")
    assert_refused(code, err, "a.jsonl is a symbolic link that leads back to itself")
    with pytest.raises(BertkitError, match="leads back to itself"), atomic_text(str(tmp_path / "a.jsonl")):
        pass
    for overwrite in (False, True):
        with pytest.raises(BertkitError, match="leads back to itself"):
            check_output_dir(tmp_path / "a.jsonl", overwrite)


# ---------------------------------------------------------------- configs


@pytest.mark.parametrize(
    "section",
    ["? [a, b]\n: 1\n", "? {a: 1}\n: 1\n", "base: &b {epochs: 1}\ntrain:\n  <<: *b\n  epochs: 3\n"],
)
def test_yaml_keys_that_are_not_names_are_errors(tmp_path, section):
    from bertkit.config import load_config

    path = tmp_path / "c.yaml"
    path.write_text("task: classify\nmodel: {name: x}\ndata: {train: a.csv}\n" + section)
    with pytest.raises(BertkitError, match=r"c\.yaml:\d+:\d+: (a key must be a name|a merge key)"):
        load_config(path)


# ---------------------------------------------------------------- line for line in every reader's sense


SEPARATORS = "great\u2028film|ok\x85next|para\u2029graph"


def test_json_lines_outputs_stay_one_line_for_every_line_reader(cli, tmp_path, tiny_model, head_models):
    """JSON leaves U+2028, U+2029 and U+0085 raw inside strings, and Python's str.splitlines (and
    older JavaScript) breaks lines there: bertkit escapes them, so each result is one line for
    any reader, and the text reads back the same."""
    texts = SEPARATORS.split("|")
    source = tmp_path / "in.txt"
    source.write_text("\n".join(texts) + "\n", encoding="utf-8")
    outputs = {
        "predict": ("predict", "-m", head_models["ner"], "-i", source, "-o", tmp_path / "p.jsonl"),
        "embed": ("embed", "-m", tiny_model, "-i", source, "-o", tmp_path / "e.jsonl"),
    }
    for name, args in outputs.items():
        code, _, err = cli(*args)
        assert code == 0, err
        written = args[-1].read_text(encoding="utf-8")
        assert len(written.splitlines()) == len(texts), name
        assert [json.loads(line)["text"] for line in written.splitlines()] == texts, name
    code, out, err = cli("tokenize", "-m", tiny_model, "-i", source, "--json")
    assert code == 0, err
    assert [json.loads(line)["text"] for line in out.splitlines()] == texts


def test_conll_output_refuses_tokens_a_row_cannot_carry(cli, tmp_path, head_models):
    """A token holding a line break or a space, or an empty one, would end or split a CoNLL row:
    the N-th sentence of the output would no longer be the N-th record of the input."""
    for tokens in (["alice", "\n", "paris"], ["new york", "x"], ["", "bob"], ["-DOCSTART-", "x"]):
        source = tmp_path / "tokens.jsonl"
        source.write_text(json.dumps({"tokens": ["fine"]}) + "\n" + json.dumps({"tokens": tokens}) + "\n")
        out = tmp_path / "out.conll"
        code, _, err = cli("predict", "-m", head_models["ner"], "-i", source, "--format", "conll", "-o", out)
        assert_refused(code, err, f"{source}:2: token", "cannot be written as a CoNLL row", "--format jsonl")
        assert not out.exists()

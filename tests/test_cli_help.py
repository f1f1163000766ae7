"""Each option's help says the default the code uses: the help is read from the Typer app itself
(not from rendered, wrapped text) and checked against what the code does with the option left out."""

def option_help(*path: str) -> dict[str, str]:
    """{option: help} of the command at `path` (e.g. "export"), options by their long name."""
    from typer.main import get_command

    from bertkit.cli import app

    command = get_command(app)
    for name in path:
        command = command.commands[name]
    return {o: p.help or "" for p in command.params for o in p.opts if o.startswith("--")}


def in_order(text: str, *words: str) -> bool:
    places = [text.find(word) for word in words]
    return all(p >= 0 for p in places) and places == sorted(places)


def test_export_check_data_default_is_the_validation_then_test_then_training_file(tmp_path):
    from bertkit.exporting.onnx import check_data_of

    text = option_help("export")["--check-data"]
    assert in_order(text, "validation", "test", "training"), text
    files = {role: tmp_path / f"{role}.csv" for role in ("train", "validation", "test")}
    for path in files.values():
        path.write_text("text,label\na,b\n")
    data = {role: {"path": str(path)} for role, path in files.items()}
    assert check_data_of({"config": {"data": data}}, None) == (files["validation"], "validation")
    del data["validation"]  # validation drawn from train: the test file, as the help says
    assert check_data_of({"config": {"data": data}}, None) == (files["test"], "test")
    files["test"].unlink()  # named but not here
    assert check_data_of({"config": {"data": data}}, None) == (files["train"], "train")
    assert check_data_of({"config": {"data": data}}, str(files["train"])) == (files["train"], "given")
    assert check_data_of({"config": {}}, None) == (None, None)


def test_export_summary_says_which_file_it_checked_on():
    from bertkit.exporting.onnx import summary_rows

    record = {"precision": "fp32", "check": {"fp32": {"max_abs_diff": 0.0, "allowed": 1e-4, "texts": 6}}}
    for role, said in (("test", "the bundle's test file"), ("given", "--check-data")):
        record["check"].update(data="d.csv", data_role=role)
        assert dict(summary_rows(record))["checked on"] == f"d.csv ({said})"


def test_predict_format_default_is_the_extension_then_the_input(tmp_path):
    from bertkit.prediction import output_format

    text = option_help("predict")["--format"]
    assert in_order(text, "extension", "CoNLL input", "else jsonl") and "SQuAD input" in text, text
    assert output_format("preds.jsonl", None, "conll") == "jsonl"  # CoNLL input, -o x.jsonl: JSON lines
    assert output_format("preds.csv", None, "squad") == "csv"
    assert output_format("preds.json", None, "squad") == "squad"  # no format of its own: the input's
    assert output_format(None, None, "conll") == "conll" and output_format(None, None, "csv") == "jsonl"
    assert output_format("preds.jsonl", "conll", "csv") == "conll"  # --format wins


def test_compare_and_tune_defaults_are_the_ones_used(tmp_path):
    from bertkit.comparison.trained import scoring_data
    from bertkit.config import load_config

    text = option_help("compare")["--data"]
    assert in_order(text, "test data", "validation"), text
    config = tmp_path / "run.yaml"
    config.write_text("task: classify\nmodel:\n  name: m\ndata:\n  train: t.csv\n  validation: v.csv\n")
    assert scoring_data(load_config(config), None)[0].endswith("v.csv")  # no test data: the validation data
    assert "required" in option_help("compare")["--output"]
    assert "file's name" in option_help("tune")["--study"]  # as `tune` names it: config.stem


def test_search_cache_default_is_where_the_help_says(tmp_path, monkeypatch):
    from bertkit.embeddings.search import default_cache_dir

    text = option_help("search")["--cache-dir"]
    assert "search/" in text and in_order(text, "$BERTKIT_CACHE", "~/.cache/bertkit"), text
    assert option_help("mine-negatives")["--cache-dir"] == text
    monkeypatch.setenv("BERTKIT_CACHE", str(tmp_path / "mine"))
    assert default_cache_dir() == tmp_path / "mine" / "search"
    monkeypatch.delenv("BERTKIT_CACHE")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))  # the feature cache's folder, one rule for both
    assert default_cache_dir() == tmp_path / "xdg" / "bertkit" / "search"

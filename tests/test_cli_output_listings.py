"""What a command says about its work: its closing line names every file it wrote, and what it
tells of its input (a format read from the content) it says once."""


def test_evaluate_lists_every_file_it_wrote(head_models, ner_data, tmp_path, cli):
    """The closing line names the files of the output folder (it named metrics.json alone, not
    the plots beside it)."""
    target = tmp_path / "eval"
    code, out, err = cli("evaluate", "-m", head_models["ner"], "-d", ner_data["test"], "-o", target)
    assert code == 0, err
    files = sorted(p.name for p in target.iterdir() if not p.name.startswith("."))
    assert "metrics.json" in files and any(name.endswith(".png") for name in files), files
    assert f"({', '.join(files)})" in " ".join((out + err).split())


def test_compare_tells_the_data_format_once(head_models, ner_data, tmp_path, cli):
    import shutil

    second = tmp_path / "second"
    shutil.copytree(head_models["ner"], second)
    data = tmp_path / "test.txt"  # CoNLL in a .txt: told from its content
    shutil.copy(ner_data["test"], data)
    asked = ("-d", data, "-o", tmp_path / "cmp", "--bootstrap", "100")
    code, out, err = cli("compare", head_models["ner"], second, *asked)
    assert code == 0, err
    said = " ".join((out + err).split())
    assert said.count(f"{data}: read as CoNLL") == 1, said  # it was said at each model's warm-up and scoring


def test_evaluate_prints_its_scores_as_json(head_models, ner_data, tmp_path, cli):
    """Standard output is one JSON object of the headline scores, as metrics.json has them (it
    printed a Python dict: `{'f1': ...}`, which no JSON reader takes); the closing line is on
    standard error."""
    import json

    target = tmp_path / "eval"
    code, out, err = cli("evaluate", "-m", head_models["ner"], "-d", ner_data["test"], "-o", target)
    assert code == 0, err
    printed = json.loads(out)
    written = json.loads((target / "metrics.json").read_text())
    assert printed and all(printed[k] == round(written[k], 4) for k in printed)
    assert "metrics written to" in err and "metrics written to" not in out

"""A command's closing line names the files it wrote, all of them."""


def test_evaluate_lists_every_file_it_wrote(head_models, ner_data, tmp_path, cli):
    """The closing line names the files of the output folder (it named metrics.json alone, not
    the plots beside it)."""
    target = tmp_path / "eval"
    code, out, err = cli("evaluate", "-m", head_models["ner"], "-d", ner_data["test"], "-o", target)
    assert code == 0, err
    files = sorted(p.name for p in target.iterdir() if not p.name.startswith("."))
    assert "metrics.json" in files and any(name.endswith(".png") for name in files), files
    assert f"({', '.join(files)})" in " ".join((out + err).split())

"""Where a command may write: never inside one of its inputs (a model, its base, a data folder), by
any option that writes (an output, a report, a cache, a plot), and never a cache inside a folder
bertkit published. Writing there changed the input: a model's content hash moved, so a later
`bertkit tune` refused the user's own study, and a bundle held files `--overwrite` then refused."""

import json
import shutil


def _untouched(folder) -> dict:
    return {p.relative_to(folder).as_posix(): p.stat().st_mtime_ns for p in folder.rglob("*")}


def test_a_search_cache_inside_the_model_is_refused(tmp_path, tiny_model, cli):
    model = tmp_path / "model"
    shutil.copytree(tiny_model, model)
    before = _untouched(model)
    corpus = tmp_path / "docs.txt"
    corpus.write_text("the film\nthe book\n")
    for place in (model, model / "cache", model / "sub" / "deeper"):
        code, _, err = cli("search", "-m", model, "--corpus", corpus, "-q", "film", "--cache-dir", place)
        assert code == 2 and "inside" in err and "an input of this command" in " ".join(err.split()), err
    code, _, err = cli("mine-negatives", "-m", model, "--pairs", corpus, "--corpus", corpus, "-o",
                       tmp_path / "t.jsonl", "--cache-dir", model / "cache")  # fmt: skip
    assert code == 2 and "inside" in err, err
    assert _untouched(model) == before  # not a folder made, not a file written


def test_a_cache_inside_a_folder_bertkit_wrote_is_refused(tmp_path, tiny_model, head_models, ner_data, cli):
    """Its files would be files the folder's manifest does not list: `--overwrite` of that folder
    then called bertkit's own cache 'files bertkit did not write'."""
    report = tmp_path / "eval"
    code, _, err = cli("evaluate", "-m", head_models["ner"], "-d", ner_data["test"], "-o", report)
    assert code == 0, err
    corpus = tmp_path / "docs.txt"
    corpus.write_text("the film\nthe book\n")
    code, _, err = cli("search", "-m", tiny_model, "--corpus", corpus, "-q", "film", "--cache-dir", report / "c")
    assert code == 2 and "a folder bertkit wrote" in " ".join(err.split()), err
    assert not (report / "c").exists()
    code, _, err = cli("search", "-m", tiny_model, "--corpus", corpus, "-q", "film", "--cache-dir", tmp_path / "c")
    assert code == 0, err  # anywhere else: the cache is kept there


def test_a_report_or_plot_inside_a_model_read_is_refused(tmp_path, head_models, ner_data, cli):
    first, second = tmp_path / "a", tmp_path / "b"
    shutil.copytree(head_models["ner"], first)
    shutil.copytree(head_models["ner"], second)
    before = _untouched(first)
    code, _, err = cli("compare", first, second, "-d", ner_data["test"], "-o", first / "report", "--bootstrap", "100")
    assert code == 2 and "inside" in err, err
    assert _untouched(first) == before
    code, _, err = cli("evaluate", "-m", first, "-d", ner_data["test"])  # evaluate's own MODEL/eval-NAME stays
    assert code == 0 and (first / f"eval-{ner_data['test'].stem}" / "metrics.json").is_file(), err


def test_inspect_plots_inside_the_data_folder_are_refused(tmp_path, tiny_model, easy_data, cli):
    data = tmp_path / "data"
    data.mkdir()
    shutil.copy(easy_data["train"], data / "train.csv")
    config = tmp_path / "run.yaml"
    config.write_text(f"task: classify\nmodel:\n  name: {tiny_model}\ndata:\n  train: {data}/train.csv\n")
    code, _, err = cli("inspect", "-c", config, "--plots", tiny_model / "plots")
    assert code == 2 and "--plots" in err and "inside" in err, err
    assert not (tiny_model / "plots").exists()
    code, out, err = cli("inspect", "-c", config, "--plots", tmp_path / "plots", "--json")
    assert code == 0 and json.loads(out)["verdict"] in ("ok", "warnings"), err

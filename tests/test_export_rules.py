"""`bertkit export`'s refusals: a check the user asked for that cannot run (check data of the wrong
kind, no data to calibrate int8 on) is exit 2 with nothing written, and `--overwrite` replaces
only this export's own earlier output, never a trained bundle or another model's export."""

import json
import shutil

import pytest

pytest.importorskip("onnxruntime")
pytest.importorskip("onnx")


def _files(folder):
    return sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*"))


@pytest.mark.slow
@pytest.mark.parametrize("quantize", [[], ["--quantize", "int8"]])
def test_check_data_of_the_wrong_kind_is_exit_2(quantize, classify_bundle, ner_data, tmp_path, cli):
    target = tmp_path / "out"
    code, _, err = cli("export", "-m", classify_bundle, "-o", target, "--check-data", ner_data["train"], *quantize)
    assert code == 2, err
    assert str(ner_data["train"]) in err and "Traceback" not in err
    assert not target.exists()
    unlabelled = tmp_path / "texts.txt"
    unlabelled.write_text("a lovely film\nthe plot was dull\n")
    folder = tmp_path / "classes"  # a folder of classes, which the export does not read: said so
    folder.mkdir()
    (folder / "positive.txt").write_text("a lovely film\n")
    code, _, err = cli("export", "-m", classify_bundle, "-o", target, "--check-data", folder, *quantize)
    assert code == 2 and "a folder" in err and "no such file" not in err, err
    assert not target.exists()
    if quantize:  # texts without labels: nothing to score int8 on
        code, _, err = cli("export", "-m", classify_bundle, "-o", target, "--check-data", unlabelled, *quantize)
        assert code == 2 and str(unlabelled) in err, err
        # export has no --label-column: the error says where the column comes from and what to give
        assert "--label-column" not in err and "the bundle's data.label_column" in err, err
        assert "labelled file" in err, err
        assert not target.exists()


@pytest.mark.slow
def test_int8_without_data_to_calibrate_on_is_exit_2(classify_bundle, easy_data, tmp_path, cli):
    moved = tmp_path / "bundle"
    shutil.copytree(classify_bundle, moved)
    info = json.loads((moved / "bertkit.json").read_text())
    info["config"]["data"] = {"train": {"path": str(tmp_path / "gone.csv")}}
    (moved / "bertkit.json").write_text(json.dumps(info))
    code, _, err = cli("export", "-m", moved, "--quantize", "int8", "-o", tmp_path / "out")
    assert code == 2 and "--check-data" in err and "gone.csv" in err, err
    assert not (tmp_path / "out").exists()
    code, _, err = cli(
        "export", "-m", moved, "--quantize", "int8", "-o", tmp_path / "out", "--check-data", easy_data["test"]
    )
    assert code == 0, err
    record = json.loads((tmp_path / "out" / "bertkit.json").read_text())["export"]
    assert record["calibration"]["data"] == str(easy_data["test"]) and record["calibration"]["rows"] > 0
    assert "static" in record["quantization"]


@pytest.mark.slow
def test_overwrite_replaces_only_this_exports_own_output(classify_bundle, tmp_path, cli):
    other = tmp_path / "other-model"
    shutil.copytree(classify_bundle, other)  # a trained bundle of another model (another folder)
    before = _files(other)
    code, _, err = cli("export", "-m", classify_bundle, "-o", other, "--overwrite")
    assert code == 2 and str(other) in err, err
    assert _files(other) == before and (other / "model.safetensors").is_file()

    theirs = tmp_path / "other-onnx"
    assert cli("export", "-m", other, "-o", theirs)[0] == 0
    code, _, err = cli("export", "-m", classify_bundle, "-o", theirs, "--overwrite")
    assert code == 2 and "other-model" in err, err
    assert json.loads((theirs / "bertkit.json").read_text())["export"]["source"] == str(other.resolve())

    mine = tmp_path / "mine-onnx"
    assert cli("export", "-m", classify_bundle, "-o", mine)[0] == 0
    code, _, err = cli("export", "-m", classify_bundle, "-o", mine, "--overwrite", "--quantize", "int8")
    assert code == 0, err
    assert json.loads((mine / "bertkit.json").read_text())["export"]["precision"] == "int8"


@pytest.mark.slow
def test_check_data_format_is_told_once(classify_bundle, tmp_path, cli):
    """A check file whose format is told from its content is announced once, not once for each
    check that reads it (it said "read as jsonl" five times)."""
    data = tmp_path / "checkdata"  # no extension: the content tells
    data.write_text('{"text": "a lovely film", "label": "positive"}\n{"text": "dull", "label": "negative"}\n')
    asked = ("--check-data", data, "--quantize", "int8")
    code, out, err = cli("export", "-m", classify_bundle, "-o", tmp_path / "out", *asked)
    assert code == 0, err
    said = " ".join((out + err).split())
    assert said.count(f"{data}: read as jsonl") == 1, said
    check = json.loads((tmp_path / "out" / "bertkit.json").read_text())["export"]["check"]
    assert check["data"] == str(data) and check["data_role"] == "given"


@pytest.mark.parametrize("given", [".", "./", "bundle/", "bundle/."])
def test_the_default_output_sits_beside_the_bundle_however_it_is_named(tmp_path, monkeypatch, given):
    """`bertkit export -m .` from inside a bundle wrote a folder named `.-onnx` inside it."""
    from bertkit.exporting.onnx import default_output

    (tmp_path / "bundle").mkdir()
    monkeypatch.chdir(tmp_path / "bundle" if given.startswith(".") else tmp_path)
    assert default_output(given, None).resolve() == tmp_path / "bundle-onnx"
    assert default_output(given, "int8").resolve() == tmp_path / "bundle-onnx-int8"

"""`bertkit export --format onnx` on tiny bundles of every task: the ONNX bundle (fp32 and int8)
gives the PyTorch bundle's results through predict, evaluate and embed, without importing torch;
the checks it records; and the errors (wrong runtime, missing extra, foreign output folder)."""

import json
import os
import random
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from helpers.in_process import run_main

pytest.importorskip("onnxruntime")
pytest.importorskip("onnx")

ROOT = Path(__file__).resolve().parent.parent


INPUTS = {
    "classify": ["a great film and lovely staff", "the plot was boring", "", "the hotel was awful really " * 20],
    "ner": ["Yesterday Alice Smith flew from Paris to Kyoto.", "", "nothing here", "Alice met Bob in Paris . " * 12],
    "embed": ["about alpha bravo", "the film was", "", "kilo lima echo"],
    "mlm-adapt": ["the film was [MASK]", "a [MASK] hotel and [MASK] staff"],
}


def _input(tmp_path: Path, task: str) -> Path:
    if task == "qa":
        rng = random.Random(5)
        words = " ".join(rng.choices(["the", "film", "met", "lima", "with", "alice", "in", "paris"], k=120))
        rows = [
            {"id": "1", "question": "who met lima ?", "context": words},
            {"question": "where ?", "context": "in paris"},
        ]
        path = tmp_path / "questions.jsonl"
        path.write_text("".join(json.dumps(r) + "\n" for r in rows))
        return path
    path = tmp_path / "input.txt"
    path.write_text("\n".join(INPUTS[task]) + "\n")
    return path


def _predict(cli, bundle: Path, source: Path, target: Path, *extra) -> list[dict]:
    code, _, err = cli("predict", "-m", bundle, "-i", source, "-o", target, *extra)
    assert code == 0, err
    return [json.loads(line) for line in target.read_text().splitlines()]


def _same(task: str, torch_rows: list[dict], onnx_rows: list[dict], tolerance: float) -> None:
    assert len(torch_rows) == len(onnx_rows)
    for a, b in zip(torch_rows, onnx_rows, strict=True):
        if task == "embed":
            if a.get("empty"):
                assert b == a
                continue
            x, y = np.array(a["embedding"]), np.array(b["embedding"])
            assert x @ y / (np.linalg.norm(x) * np.linalg.norm(y)) >= 0.9999
            continue
        assert set(a) == set(b)
        for key in ("label", "labels", "filled", "empty", "windows"):
            assert a.get(key) == b.get(key)
        if task == "ner":
            assert [(e["start"], e["end"], e["type"]) for e in a["entities"]] == [
                (e["start"], e["end"], e["type"]) for e in b["entities"]
            ]
        if task == "qa":
            assert (a["answer"], a["start"]) == (b["answer"], b["start"])
            assert [x["answer"] for x in a["alternatives"]] == [x["answer"] for x in b["alternatives"]]
        for key in ("score",):
            if isinstance(a.get(key), float):
                assert abs(a[key] - b[key]) <= tolerance


@pytest.mark.slow
@pytest.mark.parametrize("task", ["classify", "ner", "qa", "embed", "mlm-adapt"])
def test_fp32_export_gives_the_torch_results(task, bundles, tmp_path, cli):
    bundle = bundles[task]
    target = tmp_path / "onnx"
    code, _, err = cli("export", "-m", bundle, "--format", "onnx", "-o", target)
    assert code == 0, err
    assert {"model.onnx", "config.json", "tokenizer.json", "bertkit.json"} <= {p.name for p in target.iterdir()}
    assert not any(p.suffix in (".safetensors", ".bin") for p in target.iterdir())
    info = json.loads((target / "bertkit.json").read_text())
    assert info["runtime"] == "onnx" and info["export"]["precision"] == "fp32"
    check = info["export"]["check"]["fp32"]
    assert check["max_abs_diff"] <= check["allowed"] and check["tolerance"] == 1e-4
    source = _input(tmp_path, task)
    extra = {"qa": ["--n-best", "2"], "classify": ["--long-text", "windows"]}.get(task, [])  # windows, n-best
    torch_rows = _predict(cli, bundle, source, tmp_path / "torch.jsonl", *extra)
    onnx_rows = _predict(cli, target, source, tmp_path / "onnx.jsonl", *extra)
    _same(task, torch_rows, onnx_rows, 1e-4)
    if task == "classify":
        assert onnx_rows[3]["windows"] > 1 and onnx_rows[2]["empty"]


@pytest.mark.slow
@pytest.mark.parametrize("task", ["classify", "ner", "qa", "embed", "mlm-adapt"])
def test_int8_export_checks_itself_and_runs(task, bundles, tmp_path, cli):
    target = tmp_path / "int8"
    code, _, err = cli("export", "-m", bundles[task], "--quantize", "int8", "-o", target)
    assert code == 0, err
    assert not (target / "model-fp32.onnx").exists()
    record = json.loads((target / "bertkit.json").read_text())["export"]
    assert record["precision"] == "int8" and "int8 weights" in record["quantization"]
    int8 = record["check"]["int8"]
    assert "metric" in int8 and np.isfinite(int8["int8"]), record["check"]
    _kept_roles_stay_fp32(target, record["int8"], json.loads((bundles[task] / "config.json").read_text()))
    if task == "embed":
        assert int8["cosine_min"] > 0.9
    elif task != "mlm-adapt":
        assert 0.0 <= int8["equal_predictions"] <= 1.0 and int8["records"] > 0
    source = _input(tmp_path, task)
    rows = _predict(cli, target, source, tmp_path / "int8.jsonl", "--runtime", "onnx")
    assert len(rows) == len(source.read_text().splitlines())


def _kept_roles_stay_fp32(target: Path, recipe: dict, config: dict) -> None:
    """The roles the export record says it kept in fp32 (the feed-forward output, one projection a
    layer; the feed-forward input too when the first graph agreed too little) have no
    DequantizeLinear feeding them; every other weight MatMul of the encoder is int8, its input
    smoothed first."""
    import onnx

    layers = config["num_hidden_layers"]
    kept = recipe["kept_fp32"]
    assert "ffn-out" in kept and all(count == layers for count in kept.values()), recipe
    assert recipe["smoothed"]["inputs"] == layers * (4 - len(kept)), recipe  # q/k/v share one input
    nodes = onnx.load(str(target / "model.onnx")).graph.node
    dequantised = {n.output[0] for n in nodes if n.op_type == "DequantizeLinear"}
    weight_matmuls = [n for n in nodes if n.op_type == "MatMul" and "dense" in n.name]
    plain = [n.name for n in weight_matmuls if not set(n.input) & dequantised]
    assert len(plain) == len(kept) * layers, plain
    names = {"ffn-out": "/output/dense", "ffn-in": "/intermediate/dense"}  # BertOutput's, BertIntermediate's
    assert all(any(names[role] in name and "attention" not in name for role in kept) for name in plain), plain
    quantised = [n.name for n in nodes if n.op_type == "MatMul" and set(n.input) <= dequantised]  # q, k, v too
    assert len(quantised) >= (6 - len(kept)) * layers, quantised


@pytest.mark.slow
@pytest.mark.parametrize(("found", "published"), [((0.9, 1.0), True), ((0.9, 0.95), False)])
def test_int8_keeps_more_in_fp32_when_the_first_graph_agrees_too_little(
    found, published, bundles, tmp_path, cli, monkeypatch
):
    """The fastest int8 graph is tried first; agreeing on less than --min-agreement, the export
    makes the next (the feed-forward input in fp32 too) and says why; when that one agrees too
    little as well, nothing is published and the refusal names the flag."""
    from bertkit.exporting import onnx as exporting

    agreements = list(found)

    def measured(task, fp32, int8, tokenizer, info, data, fmt, report):
        report.int8.update({"records": 200, "equal_predictions": agreements[0], "agreement": agreements.pop(0)})

    monkeypatch.setattr(exporting, "compare_int8", measured)
    target = tmp_path / "int8"
    code, _, err = cli("export", "-m", bundles["classify"], "--quantize", "int8", "-o", target)
    said = " ".join(err.split())
    if published:
        assert code == 0, err
        record = json.loads((target / "bertkit.json").read_text())["export"]
        assert set(record["int8"]["kept_fp32"]) == {"ffn-out", "ffn-in"} and record["int8"]["agreement"] == 1.0
        assert record["int8"]["instead_of"]["agreement"] == 0.9
        assert "int8 keeps ffn-in in fp32 too" in said and "90.00%" in said
        _kept_roles_stay_fp32(target, record["int8"], json.loads((bundles["classify"] / "config.json").read_text()))
    else:
        assert code == 2 and "95.00%" in said and "--min-agreement 0.99" in said and not target.exists()


@pytest.mark.slow
def test_evaluate_runs_the_onnx_bundle(bundles, easy_data, tmp_path, cli):
    target = tmp_path / "onnx"
    assert cli("export", "-m", bundles["classify"], "-o", target)[0] == 0
    scores = []
    for bundle in (bundles["classify"], target):
        code, _, err = cli("evaluate", "-m", bundle, "-d", easy_data["test"], "-o", tmp_path / f"eval-{bundle.name}")
        assert code == 0, err
        scores.append(json.loads((tmp_path / f"eval-{bundle.name}" / "metrics.json").read_text()))
    assert (
        scores[0]["accuracy"] == scores[1]["accuracy"]
        and scores[0]["confusion_matrix"] == scores[1]["confusion_matrix"]
    )


@pytest.mark.slow
def test_embed_commands_run_the_onnx_bundle(bundles, tmp_path, cli):
    target = tmp_path / "onnx"
    assert cli("export", "-m", bundles["embed"], "-o", target)[0] == 0
    texts = tmp_path / "texts.txt"
    texts.write_text("about alpha bravo\nthe film was\nkilo lima\n")
    vectors = []
    for bundle in (bundles["embed"], target):
        code, _, err = cli("embed", "-m", bundle, "-i", texts, "-o", tmp_path / f"{bundle.name}.npy")
        assert code == 0, err
        vectors.append(np.load(tmp_path / f"{bundle.name}.npy"))
    cosine = (vectors[0] * vectors[1]).sum(1) / np.linalg.norm(vectors[0], axis=1) / np.linalg.norm(vectors[1], axis=1)
    assert cosine.min() >= 0.9999
    code, out, err = cli("search", "-m", target, "--corpus", texts, "--query", "alpha bravo", "--no-cache")
    assert code == 0 and "alpha" in out, err
    code, _, err = cli("embed", "-m", target, "-i", texts, "-o", tmp_path / "x.npy", "--pooling", "cls")
    assert code == 2 and "inside the graph" in err


@pytest.mark.slow
@pytest.mark.parametrize("task", ["classify", "embed"])
def test_running_an_onnx_bundle_imports_no_torch(task, bundles, tmp_path):
    target = tmp_path / "onnx"
    assert run_main("export", "-m", bundles[task], "-o", target) == 0
    source = _input(tmp_path, task)
    command = "predict" if task == "classify" else "embed"
    result = tmp_path / ("p.jsonl" if task == "classify" else "v.npy")
    script = (
        "import sys\nfrom bertkit.cli import main\n"
        "try:\n    main(sys.argv[1:])\nexcept SystemExit as stop:\n    assert stop.code in (0, None), stop.code\n"
        "bad = [m for m in sys.modules if m.split('.')[0] == 'torch' or '.modeling_' in m]\n"
        "print('LOADED', bad)\n"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1"}
    done = subprocess.run(
        [sys.executable, "-c", script, command, "-m", str(target), "-i", str(source), "-o", str(result)],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    assert "LOADED []" in done.stdout, done.stdout
    assert result.is_file()


@pytest.mark.slow
def test_runtime_errors(bundles, tmp_path, cli):
    source = _input(tmp_path, "classify")
    code, _, err = cli(
        "predict", "-m", bundles["classify"], "-i", source, "-o", tmp_path / "p.jsonl", "--runtime", "onnx"
    )
    assert code == 2 and "bertkit export" in err
    code, _, err = cli(
        "predict", "-m", bundles["classify"], "-i", source, "-o", tmp_path / "p.jsonl", "--runtime", "tpu"
    )
    assert code == 2 and "--runtime tpu" in err
    target = tmp_path / "onnx"
    assert cli("export", "-m", bundles["classify"], "-o", target)[0] == 0
    code, _, err = cli("predict", "-m", target, "-i", source, "-o", tmp_path / "p.jsonl", "--runtime", "torch")
    assert code == 2 and "--runtime onnx" in err
    code, _, err = cli("export", "-m", target)
    assert code == 2 and "already an ONNX bundle" in err
    foreign = tmp_path / "mine"
    foreign.mkdir()
    (foreign / "notes.txt").write_text("keep me")
    code, _, err = cli("export", "-m", bundles["classify"], "-o", foreign, "--overwrite")
    assert code == 2 and (foreign / "notes.txt").read_text() == "keep me"
    code, _, err = cli("export", "-m", bundles["classify"], "--format", "tflite", "-o", tmp_path / "x")
    assert code == 2 and "--format tflite" in err


def test_a_missing_extra_names_the_install_command(monkeypatch, tmp_path, cli):
    import importlib

    real = importlib.import_module

    def without_onnx(name, *args, **kwargs):
        if name.split(".")[0] in ("onnxruntime", "onnx"):
            raise ImportError(name)
        return real(name, *args, **kwargs)

    monkeypatch.setattr(importlib, "import_module", without_onnx)
    code, _, err = cli("export", "-m", tmp_path, "-o", tmp_path / "out")
    assert code == 2 and "pip install -e '.[onnx]'" in err and "'onnxruntime>=" in err


OPTIMUM_PYTHON = os.environ.get("BERTKIT_OPTIMUM_PYTHON")
OPTIMUM_CLASSES = {
    "classify": "ORTModelForSequenceClassification",
    "ner": "ORTModelForTokenClassification",
    "qa": "ORTModelForQuestionAnswering",
    "mlm-adapt": "ORTModelForMaskedLM",
}
OPTIMUM_SCRIPT = """
import json, sys
import optimum.onnxruntime as ort_models
from transformers import AutoTokenizer
bundle, cls, texts = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
model = getattr(ort_models, cls).from_pretrained(bundle)
batch = AutoTokenizer.from_pretrained(bundle)(texts, padding=True, return_tensors="np")
out = model(**batch)
names = ["start_logits", "end_logits"] if cls.endswith("QuestionAnswering") else ["logits"]
print(json.dumps({"inputs": {k: v.tolist() for k, v in batch.items()}, **{n: getattr(out, n).tolist() for n in names}}))
"""


@pytest.mark.slow
@pytest.mark.skipif(not OPTIMUM_PYTHON, reason="set BERTKIT_OPTIMUM_PYTHON to a Python with optimum-onnx installed")
@pytest.mark.parametrize("quantize", [None, "int8"])
@pytest.mark.parametrize("task", list(OPTIMUM_CLASSES))
def test_the_onnx_bundle_loads_in_optimum(task, quantize, bundles, tmp_path, cli):
    """Optimum's ORTModelFor... classes load an exported bundle as it is and give the same outputs
    as bertkit's own runtime. Optimum needs transformers 4, so it lives in another environment
    (see docs/deployment.md): this test runs there when BERTKIT_OPTIMUM_PYTHON names it."""
    from bertkit.core.onnx_runtime import OnnxModel
    from bertkit.tasks import get_task

    target = tmp_path / "onnx"
    extra = ["--quantize", quantize] if quantize else []
    assert cli("export", "-m", bundles[task], "-o", target, *extra)[0] == 0
    texts = ["Alice met Bob in Paris", "the film was [MASK] and the staff lovely"]
    found = subprocess.run(
        [OPTIMUM_PYTHON, "-c", OPTIMUM_SCRIPT, str(target), OPTIMUM_CLASSES[task], json.dumps(texts)],
        capture_output=True,
        text=True,
        env={**os.environ, "HF_HUB_OFFLINE": "1"},
    )
    assert found.returncode == 0, found.stderr[-3000:]
    theirs = json.loads(found.stdout.strip().splitlines()[-1])
    ours = OnnxModel(target)(**theirs["inputs"])
    for name in get_task(task).export.outputs:
        np.testing.assert_allclose(np.asarray(theirs[name]), getattr(ours, name), atol=1e-5)


# ---------------------------------------------------------------- int8 that agrees with its fp32 model


@pytest.mark.slow
def test_an_int8_export_below_the_agreement_floor_is_not_published(classify_bundle, tmp_path, cli, monkeypatch):
    """int8 labels that equal fp32's on less than --min-agreement (0.99 by default) of the check data
    stop the export: nothing is written, and the message names the flag; a lower floor publishes it,
    with the agreement in bertkit.json."""
    from bertkit.exporting import onnx as exporting

    real = exporting.compare_int8

    def one_in_twenty_changed(task, fp32, int8, tokenizer, info, data, fmt, report):
        real(task, fp32, int8, tokenizer, info, data, fmt, report)
        report.int8.update(equal_predictions=0.95, agreement=0.95)

    monkeypatch.setattr(exporting, "compare_int8", one_in_twenty_changed)
    target = tmp_path / "int8"
    code, _, err = cli("export", "-m", classify_bundle, "--quantize", "int8", "-o", target)
    flat = " ".join(err.split())
    assert code == 2 and "95.00%" in flat and "--min-agreement 0.99" in flat and "Traceback" not in err, err
    assert not target.exists() and not [p for p in tmp_path.iterdir() if p.name.startswith(".int8")]
    code, _, err = cli("export", "-m", classify_bundle, "--quantize", "int8", "-o", target, "--min-agreement", "0.9")
    assert code == 0, err
    assert json.loads((target / "bertkit.json").read_text())["export"]["check"]["int8"]["agreement"] == 0.95
    code, _, err = cli("export", "-m", classify_bundle, "--quantize", "int8", "--min-agreement", "1.5")
    assert code == 2 and "--min-agreement" in err

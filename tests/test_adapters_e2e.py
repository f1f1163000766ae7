"""LoRA adapters end to end on the tiny BERT: classify, ner, qa and embed trained with
`train.adapter` (two steps each: these tests are about the bundle, not about learning), each
bundle run by predict / evaluate / embed on its base, merged and exported, and two adapters of
one base served together on one copy of its weights."""

from __future__ import annotations

import json
import random
import shutil

import pytest
from helpers.tiny import write_squad

ADAPTER = "{kind: lora, r: 4, alpha: 8, dropout: 0.0, target_modules: auto}"


def _pairs(path, n: int, seed: int):
    rng = random.Random(seed)
    keys = "alpha bravo charlie delta echo foxtrot golf hotel".split()
    with open(path, "w", encoding="utf-8") as handle:
        for _ in range(n):
            a, b = rng.sample(keys, 2)
            handle.write(json.dumps({"query": f"about {a} {b}", "passage": f"the film {a} was {b} quite"}) + "\n")
    return path


@pytest.fixture(scope="module")
def adapters(tmp_path_factory, tiny_model, easy_data, ner_data) -> dict:
    """An adapter bundle of each task, 2 steps each."""
    from bertkit.config import load_config
    from bertkit.training import train

    folder = tmp_path_factory.mktemp("adapters")
    squad = write_squad(folder / "squad.json", 24, seed=1)
    pairs = _pairs(folder / "pairs.jsonl", 48, seed=1)
    runs = {
        "classify": f"data: {{train: {easy_data['train']}, validation: {easy_data['test']}}}",
        "ner": f"data: {{train: {ner_data['train']}, validation: {ner_data['test']}}}",
        "qa": f"data: {{train: {squad}, validation: {squad}}}\nqa: {{doc_stride: 16, max_question_length: 16}}",
        "embed": f"data: {{train: {pairs}, validation: {pairs}, text_column: query, text_pair_column: passage}}",
    }
    built = {}
    for task, data in runs.items():
        config = folder / f"{task}.yaml"
        config.write_text(
            f"task: {task}\nmodel: {{name: {tiny_model}, max_length: {64 if task == 'qa' else 32}}}\n{data}\n"
            f"train: {{max_steps: 2, batch_size: 8, eval_strategy: 'no', adapter: {ADAPTER}}}\n"
            f"output_dir: {folder / task}\n"
        )
        built[task] = train(load_config(str(config)))[0]
    return built


@pytest.mark.slow
def test_bundles_hold_the_adapter_and_head_with_the_base_named_and_hashed(adapters, tiny_model):
    from bertkit.core.adapters.base import weights_hash

    for name in ("classify", "ner", "qa", "embed"):
        bundle = adapters[name]
        assert (bundle / "adapter_model.safetensors").is_file() and not (bundle / "model.safetensors").exists()
        record = json.loads((bundle / "bertkit.json").read_text())["adapter"]
        assert record["base_model"] == str(tiny_model) and record["base_hash"] == weights_hash(str(tiny_model))
        assert record["r"] == 4 and record["layers_adapted"] == 12  # 2 layers x 6 projections
        assert 0 < record["trainable_parameters"] < record["parameters"] / 2
        heads = {"classify": ["classifier", "bert.pooler"], "ner": ["classifier"], "qa": ["qa_outputs"]}
        assert record["head"] == heads.get(name, [])
        size = (bundle / "adapter_model.safetensors").stat().st_size
        assert size < (tiny_model / "model.safetensors").stat().st_size / 2


@pytest.mark.slow
def test_predict_evaluate_and_embed_run_adapter_bundles_on_their_base(adapters, easy_data, ner_data, tmp_path, cli):
    source = tmp_path / "in.txt"
    source.write_text("a great film\nawful plot\n")
    code, _, err = cli("predict", "-m", adapters["classify"], "-i", source, "-o", tmp_path / "c.jsonl")
    assert code == 0, err
    assert [json.loads(line)["label"] in ("positive", "negative") for line in open(tmp_path / "c.jsonl")] == [True] * 2
    code, _, err = cli("evaluate", "-m", adapters["ner"], "-d", ner_data["test"], "-o", tmp_path / "ner")
    assert code == 0, err
    assert "f1" in json.loads((tmp_path / "ner" / "metrics.json").read_text())
    question = tmp_path / "q.jsonl"
    question.write_text(json.dumps({"question": "where is it ?", "context": "the film was shot in paris ."}) + "\n")
    code, _, err = cli("predict", "-m", adapters["qa"], "-i", question, "-o", tmp_path / "qa.jsonl")
    assert code == 0, err
    code, _, err = cli("embed", "-m", adapters["embed"], "-i", source, "-o", tmp_path / "v.jsonl")
    assert code == 0, err
    assert len((tmp_path / "v.jsonl").read_text().splitlines()) == 2


@pytest.mark.slow
def test_merge_then_export_gives_the_adapter_bundles_predictions(adapters, easy_data, tmp_path, cli):
    pytest.importorskip("onnxruntime")
    source = tmp_path / "in.txt"
    source.write_text("a great film\nawful plot\nthe room was lovely\n")
    merged = tmp_path / "merged"
    code, _, err = cli("adapter", "merge", "-m", adapters["classify"], "-o", merged)
    assert code == 0, err
    assert (merged / "model.safetensors").is_file() and not (merged / "adapter_config.json").exists()
    info = json.loads((merged / "bertkit.json").read_text())
    assert "adapter" not in info and info["merged_adapter"]["base_hash"].startswith("sha256:")
    code, _, err = cli("export", "-m", merged, "-o", tmp_path / "onnx")
    assert code == 0, err
    scores = {}
    for name, model in (("adapter", adapters["classify"]), ("merged", merged), ("onnx", tmp_path / "onnx")):
        code, _, err = cli("predict", "-m", model, "-i", source, "-o", tmp_path / f"{name}.jsonl")
        assert code == 0, err
        scores[name] = [json.loads(line)["score"] for line in open(tmp_path / f"{name}.jsonl")]
    assert scores["merged"] == pytest.approx(scores["adapter"], abs=1e-5)
    assert scores["onnx"] == pytest.approx(scores["adapter"], abs=1e-4)
    # compare: an adapter's size was its own files only (78 KB against the merged model's 395 KB);
    # the base it cannot run without is now reported beside it
    code, out, err = cli("compare", adapters["classify"], merged, "-d", easy_data["test"], "-o", tmp_path / "cmp")
    assert code == 0, err
    assert " base" in out and "size is its own files" in " ".join(out.split())  # the terminal's table too
    rows = json.loads((tmp_path / "cmp" / "report.json").read_text())["models"]
    assert rows[0]["base_size_bytes"] > rows[0]["size_bytes"] and rows[1]["base_size_bytes"] is None
    assert rows[0]["size_bytes"] + rows[0]["base_size_bytes"] >= rows[1]["size_bytes"]
    assert " KB base |" in (tmp_path / "cmp" / "report.md").read_text()


@pytest.mark.slow
def test_a_missing_or_different_base_is_refused(adapters, tmp_path, tiny_model, cli):
    source = tmp_path / "in.txt"
    source.write_text("a great film\n")
    moved = tmp_path / "moved"
    shutil.copytree(adapters["classify"], moved)
    info = json.loads((moved / "bertkit.json").read_text())
    info["adapter"].update(base_model=str(tmp_path / "gone"), base_path=str(tmp_path / "gone"))
    (moved / "bertkit.json").write_text(json.dumps(info))
    code, _, err = cli("predict", "-m", moved, "-i", source, "-o", tmp_path / "a.jsonl")
    assert code == 2 and "which is not here" in err and "gone" in err
    other = tmp_path / "other"
    shutil.copytree(tiny_model, other)
    with open(other / "model.safetensors", "ab") as handle:  # other bytes: another model as far as the hash goes
        handle.write(b" ")
    info["adapter"].update(base_model=str(other), base_path=str(other))
    (moved / "bertkit.json").write_text(json.dumps(info))
    code, _, err = cli("predict", "-m", moved, "-i", source, "-o", tmp_path / "b.jsonl")
    assert code == 2 and "is a different one" in err


@pytest.mark.slow
def test_serving_two_adapters_of_one_base_shares_its_weights(adapters):
    pytest.importorskip("fastapi")
    pytest.importorskip("httpx")
    from fastapi.testclient import TestClient

    from bertkit.serving import load_several
    from bertkit.serving.app import build_app
    from bertkit.serving.predictor import Predictor

    paths = [str(adapters["classify"]), str(adapters["ner"])]
    predictors = load_several(paths, "cpu", False, None, None)
    first, second = (p.network.bert.encoder.layer[0].attention.self.query for p in predictors)
    assert first.base_layer.weight.data_ptr() == second.base_layer.weight.data_ptr()  # one copy of the base
    embeddings = [p.network.bert.embeddings.word_embeddings.weight.data_ptr() for p in predictors]
    assert embeddings[0] == embeddings[1]
    assert not first.lora_A["default"].weight.equal(second.lora_A["default"].weight)  # each its own adapter
    alone = Predictor(paths[0], "cpu")  # one model, as every other command runs it
    with TestClient(build_app(predictors, max_wait_ms=5)) as client:
        listed = client.get("/info").json()
        assert [(m["model"], m["task"]) for m in listed["models"]] == [("classify", "classify"), ("ner", "ner")]
        reply = client.post("/predict", json={"model": "classify", "texts": ["a great film"]})
        assert reply.status_code == 200, reply.text
        assert reply.json()["results"] == alone.run([{"text": "a great film"}])
        reply = client.post("/predict", json={"model": "ner", "texts": ["alice went to paris"]})
        assert reply.status_code == 200 and "entities" in reply.json()["results"][0], reply.text
        unnamed = client.post("/predict", json={"texts": ["a great film"]})
        assert unnamed.status_code == 422 and '"model"' in unnamed.text
        assert client.post("/predict", json={"model": "third", "texts": ["x"]}).status_code == 422
        # the try-it page: one model's page at a time, naming its model in what it sends (its
        # requests without one were all refused), linking to the others
        page = client.get("/?model=ner").text
        assert '"name": "ner"' in page and '"task": "ner"' in page and 'href="/?model=classify"' in page
        assert "model: INFO.name" in page
        assert '"name": "classify"' in client.get("/").text
        assert client.get("/?model=third").status_code == 404


@pytest.mark.slow
def test_the_shared_base_stays_one_copy_when_each_model_is_moved_and_cast(adapters):
    """A GPU server moves each model to the card in half precision once it is loaded; the model
    loaded second must find the base already there and in that precision, not move a copy of its
    own. A cast runs through the same torch `Module._apply` as a move to a device, so the CPU
    checks it with bf16: one copy of the base, in bf16, the adapters each their own."""
    import torch

    from bertkit.core.adapters.loading import SharedBases
    from bertkit.tasks import get_task
    from bertkit.tasks.bundle import open_bundle

    shared = SharedBases()
    networks = [
        open_bundle(str(adapters[name])).load_model(get_task(name).auto_model, "cpu", "bf16", shared=shared)
        for name in ("classify", "ner")
    ]
    first, second = (n.bert.encoder.layer[0].attention.self.query for n in networks)
    assert first.base_layer.weight.dtype == second.base_layer.weight.dtype == torch.bfloat16
    assert first.base_layer.weight.data_ptr() == second.base_layer.weight.data_ptr()
    embeddings = [n.bert.embeddings.word_embeddings.weight for n in networks]
    assert embeddings[0].data_ptr() == embeddings[1].data_ptr() and embeddings[0].dtype == torch.bfloat16
    assert first.lora_A["default"].weight.data_ptr() != second.lora_A["default"].weight.data_ptr()


@pytest.mark.slow
@pytest.mark.parametrize("adapter", [True, False])
def test_training_from_an_adapter_bundle_says_to_merge_it_first(adapters, easy_data, tmp_path, cli, adapter):
    """An adapter bundle as model.name (with or without a new adapter on it) is refused before any
    file of it is read as a whole model's, with the command that makes it one."""
    bundle = adapters["classify"]
    config = tmp_path / "again.yaml"
    config.write_text(
        f"task: classify\nmodel: {{name: {bundle}, max_length: 32}}\ndata: {{train: {easy_data['train']}}}\n"
        f"train: {{max_steps: 1, batch_size: 8, eval_strategy: 'no'"
        + (f", adapter: {ADAPTER}}}\n" if adapter else "}\n")
        + f"output_dir: {tmp_path / 'out'}\n"
    )
    code, _, err = cli("train", "classify", "-c", config)
    said = " ".join(err.split())
    assert code == 2 and "is an adapter bundle, not a whole model" in said and "bertkit adapter merge" in said, err
    assert not (tmp_path / "out").exists()


@pytest.mark.slow
def test_info_says_an_adapter_bundle_needs_its_base_and_whether_it_is_here(adapters, tmp_path, cli):
    code, out, err = cli("info", "--model", adapters["classify"])
    said = " ".join(out.split())
    assert code == 0 and "adapter LoRA r=4 on the base" in said and "the base found at" in said, out + err
    moved = tmp_path / "moved"
    shutil.copytree(adapters["classify"], moved)
    info = json.loads((moved / "bertkit.json").read_text())
    info["adapter"].update(base_model=str(tmp_path / "gone"), base_path=str(tmp_path / "gone"))
    (moved / "bertkit.json").write_text(json.dumps(info))
    code, out, err = cli("info", "--model", moved)
    said = " ".join(out.split())
    assert code == 0 and "the base is not usable here" in said and "gone" in said, out + err


@pytest.mark.slow
def test_encoder_commands_broken_adapter_files_and_the_base_as_output(adapters, tiny_model, tmp_path, cli):
    """embed / attention on a classify or ner adapter bundle loaded the bare encoder, where the
    adapter's layers are named in the task model: a peft traceback. A cut or missing adapter file
    was a traceback too (peft then looked for it on the Hub). `adapter merge -o BASE --overwrite`
    replaced the base every adapter of it needs."""
    source = tmp_path / "in.txt"
    source.write_text("a great film\nawful plot\n")
    code, _, err = cli("embed", "-m", adapters["classify"], "-i", source, "-o", tmp_path / "v.jsonl")
    assert code == 0, err
    code, _, err = cli("adapter", "merge", "-m", adapters["classify"], "-o", tmp_path / "merged")
    assert code == 0, err
    code, _, err = cli("embed", "-m", tmp_path / "merged", "-i", source, "-o", tmp_path / "m.jsonl")
    assert code == 0, err
    vectors = [json.loads(line) for line in (tmp_path / "v.jsonl").read_text().splitlines()]
    merged = [json.loads(line) for line in (tmp_path / "m.jsonl").read_text().splitlines()]
    key = next(k for k, v in vectors[0].items() if isinstance(v, list))
    for a, b in zip(vectors, merged, strict=True):
        assert a[key] == pytest.approx(b[key], abs=1e-5)  # the adapted encoder, as merged
    code, _, err = cli("attention", "-m", adapters["ner"], "-t", "a great film", "-o", tmp_path / "a.png")
    assert code == 0, err
    cut = shutil.copytree(adapters["classify"], tmp_path / "cut")
    weights = cut / "adapter_model.safetensors"
    weights.write_bytes(weights.read_bytes()[: weights.stat().st_size // 2])
    code, _, err = cli("predict", "-m", cut, "-i", source, "-o", tmp_path / "c.jsonl")
    assert code == 2 and "adapter_model.safetensors is damaged or incomplete" in " ".join(err.split()), err
    weights.unlink()
    code, _, err = cli("predict", "-m", cut, "-i", source, "-o", tmp_path / "c.jsonl")
    assert code == 2 and "an adapter bundle without its weights" in " ".join(err.split()), err
    # peft's config: cut, missing (it was then read as a whole model with no weights), or not the
    # weights' (a rank edited: a state_dict traceback)
    for case in ("cut", "missing", "edited"):
        broken = shutil.copytree(adapters["classify"], tmp_path / f"config-{case}")
        config = broken / "adapter_config.json"
        if case == "cut":
            config.write_text(config.read_text()[:40])
        elif case == "missing":
            config.unlink()
        else:
            config.write_text(json.dumps({**json.loads(config.read_text()), "r": 2}))
        code, _, err = cli("predict", "-m", broken, "-i", source, "-o", tmp_path / "c.jsonl")
        said = {"cut": "not valid JSON", "missing": "without its adapter_config.json", "edited": "do not load together"}
        assert code == 2 and said[case] in " ".join(err.split()), (case, err)
    base = shutil.copytree(tiny_model, tmp_path / "base")  # the same weights: the adapter's base here
    moved = shutil.copytree(adapters["classify"], tmp_path / "moved")
    info = json.loads((moved / "bertkit.json").read_text())
    info["adapter"].update(base_model=str(base), base_path=str(base))
    (moved / "bertkit.json").write_text(json.dumps(info))
    before = (base / "model.safetensors").read_bytes()
    code, _, err = cli("adapter", "merge", "-m", moved, "-o", base, "--overwrite")
    assert code == 2 and "an input of this command" in " ".join(err.split()), err
    (tmp_path / "empty").mkdir()  # was told it "holds a whole model ... needs no merging"
    code, _, err = cli("adapter", "merge", "-m", tmp_path / "empty", "-o", tmp_path / "out")
    assert code == 2 and "not a model directory" in err, err
    assert (base / "model.safetensors").read_bytes() == before
    card = (adapters["classify"] / "README.md").read_text()
    python = card.split("```python\n")[1].split("```")[0]
    assert f"bertkit adapter merge -m {adapters['classify']}" in python and "-merged" in python


@pytest.mark.slow
def test_resuming_with_other_adapter_settings_is_refused(tiny_model, easy_data, tmp_path, monkeypatch):
    """A checkpoint written with an adapter resumed with another rank, or with none (and a whole
    model's checkpoint resumed with an adapter), stopped in the Trainer with a traceback."""
    from bertkit import training
    from bertkit.config import load_config
    from bertkit.core.errors import BertkitError
    from bertkit.training import run

    path = tmp_path / "run.yaml"
    path.write_text(
        f"task: classify\nmodel: {{name: {tiny_model}, max_length: 32}}\n"
        f"data: {{train: {easy_data['train']}, validation: {easy_data['test']}}}\n"
        f"train: {{epochs: 2, batch_size: 16, adapter: {ADAPTER}}}\n"
        f"output_dir: {tmp_path / 'model'}\n"
    )

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(run, "write_bundle", interrupted)
    with pytest.raises(KeyboardInterrupt):
        training.train(load_config(str(path)))
    monkeypatch.undo()
    said = "written with train.adapter LoRA r=4, alpha 8, on 12 layers; this run asks for"
    with pytest.raises(BertkitError, match=said):
        training.train(load_config(str(path), ["train.adapter.r=2"]), resume=True)
    with pytest.raises(BertkitError, match="written by a run with train.adapter .*this run sets none"):
        training.train(load_config(str(path), ["train.adapter=null"]), resume=True)
    # the checkpoint holds the adapter only: on other base weights it went on silently
    from safetensors.torch import load_file, save_file

    other = shutil.copytree(tiny_model, tmp_path / "other")
    weights = load_file(other / "model.safetensors")
    save_file({name: tensor + 0.01 for name, tensor in weights.items()}, other / "model.safetensors")
    with pytest.raises(BertkitError, match="trained so far on a base whose weights hash"):
        training.train(load_config(str(path), [f"model.name={other}"]), resume=True)
    final, _ = training.train(load_config(str(path)), resume=True)  # the same settings resume
    assert (final / "adapter_model.safetensors").is_file()


@pytest.mark.slow
def test_an_adapter_scaled_past_float_range_stops_the_run(tiny_model, easy_data, tmp_path, cli):
    """alpha 1e30: every step's gradient norm was infinite, clipping scaled each update to nothing,
    and the run ended with exit 0 and a model that had learnt nothing (the loss stayed finite)."""
    config = tmp_path / "huge.yaml"
    config.write_text(
        f"task: classify\nmodel: {{name: {tiny_model}, max_length: 32}}\ndata: {{train: {easy_data['train']}}}\n"
        "train: {max_steps: 4, batch_size: 8, eval_strategy: 'no', "  # fewer steps than logging_steps: none logged
        "adapter: {kind: lora, r: 4, alpha: 1.0e+30, dropout: 0.0, target_modules: auto}}\n"
        f"output_dir: {tmp_path / 'out'}\n"
    )
    code, _, err = cli("train", "classify", "-c", config)
    said = " ".join(err.split())
    assert code == 2 and "the gradient norm is inf" in said and "train.adapter.alpha (1e+30, with r 4)" in said, err
    assert not (tmp_path / "out").exists()


@pytest.mark.slow
def test_an_adapter_answers_the_same_alone_and_served_beside_others(adapters, tmp_path, cli):
    """With several --model, serve kept an adapter apart from its base weights while every other
    command merged it in: the last digits of its answers differed from predict's (9 of 12 vectors
    of an embed adapter). Every reader now runs the adapter apart; merge and export merge it."""
    pytest.importorskip("fastapi")
    pytest.importorskip("httpx")
    from fastapi.testclient import TestClient

    from bertkit.serving import load_several
    from bertkit.serving.app import build_app

    source = tmp_path / "in.txt"
    texts = ["a great film", "awful plot", "the room was lovely and the staff was boring"]
    source.write_text("\n".join(texts) + "\n")
    code, _, err = cli("predict", "-m", adapters["embed"], "-i", source, "-o", tmp_path / "p.jsonl")
    assert code == 0, err
    offline = [json.loads(line) for line in (tmp_path / "p.jsonl").read_text().splitlines()]
    plain = tmp_path / "plain"
    assert cli("adapter", "merge", "-m", adapters["classify"], "-o", plain)[0] == 0
    for others in ([adapters["classify"]], [plain]):  # another adapter of its base, or any other model
        predictors = load_several([str(adapters["embed"]), *map(str, others)], "cpu", False, None, None)
        with TestClient(build_app(predictors, max_wait_ms=5)) as client:
            reply = client.post("/predict", json={"model": "embed", "texts": texts})
        assert reply.status_code == 200, reply.text
        assert reply.json()["results"] == offline


@pytest.mark.slow
def test_damaged_bundles_are_refused_not_run_on_random_or_overflowing_weights(adapters, tmp_path, cli):
    """A weights file that lost a tensor loaded with that tensor random (a different answer every
    run, exit 0); an adapter file that lost a LoRA matrix ran without it; an adapter of another peft
    kind crashed every reader; an adapter scaled by lora_alpha 1e38 has finite weights and NaN
    outputs, which merge and export published."""
    from safetensors.torch import load_file, save_file

    source = tmp_path / "in.txt"
    source.write_text("a great film\n")
    merged = tmp_path / "merged"
    assert cli("adapter", "merge", "-m", adapters["classify"], "-o", merged)[0] == 0
    weights = load_file(merged / "model.safetensors")
    lost = next(k for k in weights if k.endswith("attention.self.query.weight"))
    del weights[lost]
    save_file(weights, merged / "model.safetensors")
    code, _, err = cli("predict", "-m", merged, "-i", source, "-o", tmp_path / "a.jsonl")
    assert code == 2 and f"lacks 1 tensor(s) the model reads ({lost})" in " ".join(err.split()), err
    cases = {
        "matrix": ("lacks 1 tensor(s) of the adapter", None),
        "kind": ("peft_type 'IA3'; bertkit trains and reads LORA adapters only", {"peft_type": "IA3"}),
        "alpha": ("gives NaN or infinite outputs", {"lora_alpha": 1e38}),
    }
    for case, (said, settings) in cases.items():
        broken = shutil.copytree(adapters["classify"], tmp_path / case)
        if settings is None:
            tensors = load_file(broken / "adapter_model.safetensors")
            del tensors[next(k for k in tensors if "lora_B" in k)]
            save_file(tensors, broken / "adapter_model.safetensors")
        else:
            config = broken / "adapter_config.json"
            config.write_text(json.dumps({**json.loads(config.read_text()), **settings}))
        predict = ["predict", "-m", broken, "-i", source, "-o", tmp_path / "b.jsonl"]
        for command in (predict, ["adapter", "merge", "-m", broken, "-o", tmp_path / "m"]):
            code, _, err = cli(*command)
            assert code == 2 and said in " ".join(err.split()), (case, command[0], err)
        assert not (tmp_path / "m").exists()

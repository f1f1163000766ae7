"""The encoder-family matrix: every family `bertkit model tiny --family` builds (WordPiece, BPE and
Unigram tokenizers) × every task, each cell one run of train → predict → export to ONNX → predict
on the ONNX bundle, whose results must be the PyTorch bundle's. docs/families.md shows the table.

Kept cheap on purpose (the whole matrix is budgeted at about two minutes on a CI runner): models
32 wide and 2 layers deep with a few hundred tokens, built once per family per session; a few
dozen examples; two training steps; every command in-process. What is tested is that each
family runs through each task's code, not that it learns.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

import numpy as np
import pytest
from helpers.tiny import ner_sentence, sentence, write_conll, write_easy_csv, write_squad

from bertkit.tiny_families import BUILT_IN_TEXT, FAMILIES

pytest.importorskip("onnxruntime")
pytest.importorskip("onnx")

TASKS = ["classify", "ner", "qa", "mlm-adapt", "embed"]
KEYS = ["alpha", "bravo", "kilo", "lima", "delta", "echo", "golf", "hotel"]
# cells that cannot work, with the reason (docs/families.md lists them too)
XFAIL: dict[tuple[str, str], str] = {}

INPUTS = {
    "classify": ["a great film and lovely staff", "the plot was boring", ""],
    "ner": ["Yesterday Alice Smith flew from Paris to Kyoto.", "", "nothing here"],
    "embed": ["about alpha bravo", "", "kilo lima echo"],
    "mlm-adapt": ["the film was {mask}", "a {mask} hotel and {mask} staff"],
}
QUESTIONS = [
    {"id": "1", "question": "which place ?", "context": "alice met bruno in paris with the staff"},
    {"id": "2", "question": "which person ?", "context": "in kyoto hana tanaka saw the show"},
]


@pytest.fixture(scope="session")
def matrix_data(tmp_path_factory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("matrix-data")
    rng = random.Random(7)
    pairs = []
    for _ in range(24):
        a, b = rng.sample(KEYS, 2)
        pairs.append({"query": f"about {a} {b}", "passage": " ".join([a, b, *rng.choices(["the", "film"], k=3)])})
    (folder / "pairs.jsonl").write_text("".join(json.dumps(p) + "\n" for p in pairs))
    corpus = [sentence(rng, label) for label in ["positive", "negative"] * 16]
    (folder / "corpus.txt").write_text("\n".join(corpus) + "\n")
    vocab = corpus + [" ".join(ner_sentence(rng)[0]) for _ in range(40)] + BUILT_IN_TEXT
    vocab += [f"{p['query']} {p['passage']}" for p in pairs] + [q["context"] for q in QUESTIONS]
    (folder / "vocab.txt").write_text("\n".join(vocab) + "\n")
    return {
        "classify": write_easy_csv(folder / "classify.csv", 32, seed=1),
        "ner": write_conll(folder / "ner.conll", 32, seed=1),
        "qa": write_squad(folder / "squad.json", 16, seed=1),
        "qa-dev": write_squad(folder / "squad-dev.json", 4, seed=2),
        "embed": folder / "pairs.jsonl",
        "mlm-adapt": folder / "corpus.txt",
        "vocab": folder / "vocab.txt",
    }


@pytest.fixture(scope="session")
def family_model(tmp_path_factory, matrix_data):
    """A tiny model of a family (2 layers, 32 wide, at most 400 tokens learnt from the matrix's
    data), built once per session through `bertkit.tiny_families`, as `model tiny --family` does."""
    from bertkit.tiny_families import build_family
    from bertkit.tiny_models import Shape

    built: dict[str, Path] = {}

    def get(family: str) -> Path:
        if family not in built:
            folder = tmp_path_factory.mktemp(f"family-{family}") / "model"
            build_family(family, folder, Shape(2, 32, 2, 64), [matrix_data["vocab"]], 400)
            built[family] = folder
        return built[family]

    return get


@pytest.fixture(autouse=True, scope="module")
def _one_thread():
    """Models this small gain nothing from torch's second thread, and on a busy CI runner (or a
    machine shared by several runs) its spinning made each forward pass 0.7 s instead of 1 ms."""
    import torch

    kept = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(kept)


def _config(task: str, model: Path, data: dict[str, Path], output: Path) -> str:
    head = f"task: {task}\nmodel:\n  name: {model}\n  max_length: {64 if task == 'qa' else 32}\n"
    train = "train:\n  max_steps: 2\n  batch_size: 8\n  learning_rate: 1.0e-3\n  eval_strategy: 'no'\n"
    body = {
        "classify": f"data:\n  train: {data['classify']}\n",
        "ner": f"data:\n  train: {data['ner']}\n",
        "qa": f"data:\n  train: {data['qa']}\n  validation: {data['qa-dev']}\nqa:\n  doc_stride: 16\n"
        "  max_question_length: 16\n",
        "mlm-adapt": f"data:\n  train: {data['mlm-adapt']}\n",
        "embed": f"data:\n  train: {data['embed']}\n  text_column: query\n  text_pair_column: passage\n",
    }[task]
    return f"{head}{body}{train}output_dir: {output}\n"


def _input(task: str, folder: Path, tokenizer_folder: Path) -> Path:
    if task == "qa":
        path = folder / "questions.jsonl"
        path.write_text("".join(json.dumps(q) + "\n" for q in QUESTIONS))
        return path
    lines = INPUTS[task]
    if task == "mlm-adapt":
        from transformers import AutoTokenizer

        mask = AutoTokenizer.from_pretrained(tokenizer_folder).mask_token
        lines = [line.format(mask=mask) for line in lines]
    path = folder / "input.txt"
    path.write_text("\n".join(lines) + "\n")
    return path


def _rows(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def _same_results(task: str, torch_rows: list[dict], onnx_rows: list[dict]) -> None:
    assert len(torch_rows) == len(onnx_rows)
    for a, b in zip(torch_rows, onnx_rows, strict=True):
        assert set(a) == set(b)
        if task == "embed" and not a.get("empty"):
            x, y = np.array(a["embedding"]), np.array(b["embedding"])
            assert x @ y / (np.linalg.norm(x) * np.linalg.norm(y)) >= 0.9999
            continue
        for key in ("label", "labels", "filled", "empty", "answer", "start"):
            assert a.get(key) == b.get(key), (key, a, b)
        if task == "ner":
            assert [(e["start"], e["end"], e["type"]) for e in a["entities"]] == [
                (e["start"], e["end"], e["type"]) for e in b["entities"]
            ]


# one cell a test: train, predict, export to ONNX, predict with the ONNX bundle
CELLS = [
    pytest.param(family, task, marks=[pytest.mark.xfail(reason=XFAIL[family, task], strict=True)])
    if (family, task) in XFAIL
    else pytest.param(family, task)
    for family in FAMILIES
    for task in TASKS
]


@pytest.mark.slow
@pytest.mark.parametrize("family, task", CELLS)
def test_family_runs_the_task(family, task, family_model, matrix_data, tmp_path, cli):
    model = family_model(family)
    config = tmp_path / "run.yaml"
    config.write_text(_config(task, model, matrix_data, tmp_path / "bundle"))
    code, _, err = cli("train", task, "-c", config)
    assert code == 0, err
    info = json.loads((tmp_path / "bundle" / "bertkit.json").read_text())
    assert info["task"] == task

    source = _input(task, tmp_path, model)
    code, _, err = cli("predict", "-m", tmp_path / "bundle", "-i", source, "-o", tmp_path / "torch.jsonl")
    assert code == 0, err
    torch_rows = _rows(tmp_path / "torch.jsonl")
    assert len(torch_rows) == len(source.read_text().splitlines())

    code, _, err = cli("export", "-m", tmp_path / "bundle", "--format", "onnx", "-o", tmp_path / "onnx")
    assert code == 0, err
    code, _, err = cli("predict", "-m", tmp_path / "onnx", "-i", source, "-o", tmp_path / "onnx.jsonl")
    assert code == 0, err
    _same_results(task, torch_rows, _rows(tmp_path / "onnx.jsonl"))


@pytest.mark.parametrize("family", list(FAMILIES))
def test_every_family_reads_punctuation_as_words_of_its_own(family, family_model):
    """NER's words (entity spans are made of them): SentencePiece families split at spaces only, and
    an entity came out as "(Paris)," or "Kyoto!", or as a whole run of CJK text; every family must
    give the same words here."""
    from bertkit.core.tokenization import load_tokenizer, words_with_offsets

    tokenizer = load_tokenizer(str(family_model(family)))
    text = "(Paris), met Mr. Smith in  Kyoto! 田中は東京に"
    words = words_with_offsets(tokenizer, text)
    expected = ["(", "Paris", ")", ",", "met", "Mr", ".", "Smith", "in", "Kyoto", "!"]
    expected += ["田", "中", "は", "東", "京", "に"]
    assert [w for w, _, _ in words] == expected
    assert all(text[s:e] == w for w, s, e in words)

"""The documented route to a local Japanese model (docs/japanese.md): `bertkit tokenizer train
--japanese`, then `bertkit model tiny --from` that tokenizer folder. The model must keep the
MeCab (unidic-lite) + WordPiece tokenizer through saving and loading, and the Japanese jobs and
configs must run on it."""

import json

import pytest
import yaml
from conftest import ROOT, shared
from helpers.checks import assert_refused

EXAMPLES = ROOT / "examples" / "ja"
TEXT = "ｻｸﾗ電機は２０２６年に新しいＡＩを発表した。東京で雨が降りました。"


@pytest.fixture(scope="module")
def pair(tmp_path_factory):
    """The documented pair, through the CLI: (tokenizer folder, tiny model folder)."""
    pytest.importorskip("fugashi", reason="Japanese support needs bertkit[ja]")
    pytest.importorskip("unidic_lite", reason="Japanese support needs bertkit[ja]")
    from bertkit.cli import main

    folder = tmp_path_factory.mktemp("ja-pair")
    tokenizer, model = folder / "tokenizer", folder / "bert-tiny"
    for args in (
        ["tokenizer", "train", "--japanese", "-i", EXAMPLES / "corpus.txt", "-o", tokenizer]
        + ["--vocab-size", "900", "--min-frequency", "1"],
        ["model", "tiny", "--from", tokenizer, "-o", model],
    ):
        try:
            main([str(a) for a in args])
        except SystemExit as stop:
            assert stop.code in (0, None), args
    return tokenizer, model


def test_a_tokenizer_folder_gives_a_bert_with_that_tokenizer(pair):
    import torch
    from transformers import AutoModel, AutoTokenizer

    from bertkit.core.japanese import split_words
    from bertkit.core.tokenization import load_tokenizer

    tokenizer_folder, model_folder = pair
    assert not (tokenizer_folder / "config.json").exists()
    tokenizer = load_tokenizer(str(model_folder))
    # the round trip keeps the Japanese tokenizer: MeCab with unidic-lite, then WordPiece
    assert type(tokenizer).__name__ == "BertJapaneseTokenizer"
    assert type(tokenizer.word_tokenizer).__name__ == "MecabTokenizer"
    assert json.loads((model_folder / "tokenizer_config.json").read_text())["mecab_kwargs"] == {
        "mecab_dic": "unidic_lite"
    }
    assert tokenizer.word_tokenizer.tokenize(TEXT) == split_words(TEXT)
    assert tokenizer(TEXT)["input_ids"] == load_tokenizer(str(tokenizer_folder))(TEXT)["input_ids"]
    assert type(AutoTokenizer.from_pretrained(model_folder)).__name__ == "BertJapaneseTokenizer"
    # a BERT whose embeddings are exactly the tokenizer's vocabulary, reading text pairs
    config = json.loads((model_folder / "config.json").read_text())
    assert config["model_type"] == "bert" and config["vocab_size"] == len(tokenizer) >= 900
    assert config["pad_token_id"] == tokenizer.pad_token_id and config["type_vocab_size"] == 2
    model = AutoModel.from_pretrained(model_folder)
    encoded = tokenizer("東京で雨が降った。", "大阪は晴れた。", return_tensors="pt")
    assert encoded["token_type_ids"].sum() > 0
    with torch.no_grad():
        assert model(**encoded).last_hidden_state.shape[-1] == 64


def test_help_names_a_tokenizer_folder_as_a_source(cli):
    code, out, _ = cli("model", "tiny", "--help")
    words = " ".join(out.replace("│", " ").split())
    assert code == 0 and "a tokenizer directory (`bertkit tokenizer train`" in words


def test_an_english_tokenizer_folder_gives_a_bert_too(cli, tmp_path):
    from transformers import AutoModel

    from bertkit.core.tokenization import load_tokenizer

    tokenizer, model = tmp_path / "tokenizer", tmp_path / "bert-tiny"
    corpus = ROOT / "examples" / "reviews" / "train.csv"
    assert cli("tokenizer", "train", "-i", corpus, "-o", tokenizer, "--vocab-size", "600")[0] == 0
    code, out, err = cli("model", "tiny", "--from", tokenizer, "-o", model, "--layers", "1")
    assert code == 0, err
    assert "the tokenizer folder's" in out and "tiny bert model (BertModel)" in " ".join((out + err).split())
    loaded = load_tokenizer(str(model))
    assert len(loaded) == json.loads((model / "config.json").read_text())["vocab_size"] == 600
    assert loaded("a great film")["input_ids"] == load_tokenizer(str(tokenizer))("a great film")["input_ids"]
    assert AutoModel.from_pretrained(model).config.num_hidden_layers == 1


def test_what_is_not_a_source_is_refused_naming_the_sources_that_work(cli, pair, tmp_path):
    tokenizer_folder, _ = pair
    empty = tmp_path / "empty"
    empty.mkdir()
    code, _, err = cli("model", "tiny", "--from", empty, "-o", tmp_path / "out")
    assert_refused(code, err, "neither a model nor a tokenizer directory", "`bertkit model tiny`")
    assert_refused(code, err, "`bertkit tokenizer train`", "`bertkit train`", "Hub id")
    # where a model is needed, a tokenizer folder is not one: the message says how to make one
    config = tmp_path / "run.yaml"
    config.write_text(
        f"task: classify\nmodel:\n  name: {tokenizer_folder}\ndata:\n  train: {EXAMPLES / 'news/train.csv'}\n"
    )
    code, _, err = cli("train", "classify", "-c", config, "--set", f"output_dir={tmp_path / 'run'}")
    assert_refused(code, err, "is not a model directory", f"bertkit model tiny --from {tokenizer_folder}")
    assert "tokenizer train" not in " ".join(err.split())  # not a source of models


def fit(cli, tmp_path, task, model, body: str):
    bundle = tmp_path / task
    config = tmp_path / f"{task}.yaml"
    config.write_text(f"task: {task}\nmodel:\n  name: {model}\n  max_length: 64\n{body}output_dir: {bundle}\n")
    code, out, err = cli("train", task, "-c", config)
    assert code == 0, out + err
    return bundle


@pytest.mark.slow
def test_japanese_classify_and_ner_on_the_pair(cli, pair, tmp_path):
    _, model = pair
    news = fit(
        cli,
        tmp_path,
        "classify",
        model,
        f"data:\n  train: {EXAMPLES / 'news/train.csv'}\n  test: {EXAMPLES / 'news/test.csv'}\n"
        "train:\n  epochs: 15\n  batch_size: 8\n  learning_rate: 3.0e-3\n  seed: 1\n",
    )
    assert json.loads((news / "metrics.json").read_text())["test"]["accuracy"] >= 0.6  # 3 classes
    code, out, err = cli("predict", "-m", news, "-i", EXAMPLES / "news" / "predict.txt")
    assert code == 0, err
    assert {json.loads(line)["label"] for line in out.splitlines()} <= {"スポーツ", "経済", "テクノロジー"}
    ner = fit(
        cli,
        tmp_path,
        "ner",
        model,
        f"data:\n  train: {EXAMPLES / 'ner/train.json'}\n  validation: {EXAMPLES / 'ner/dev.json'}\n"
        "ner:\n  span_field: span\ntrain:\n  epochs: 20\n  batch_size: 8\n  learning_rate: 3.0e-3\n  seed: 1\n",
    )
    assert json.loads((ner / "metrics.json").read_text())["validation"]["token_accuracy"] > 0.7
    code, out, err = cli("predict", "-m", ner, "-i", EXAMPLES / "news" / "predict.txt")
    assert code == 0, err
    texts = (EXAMPLES / "news" / "predict.txt").read_text(encoding="utf-8").splitlines()
    for text, line in zip(texts, out.splitlines(), strict=True):
        for entity in json.loads(line)["entities"]:
            assert text[entity["start"] : entity["end"]] == entity["text"]


LOCAL = sorted(p.stem for p in (ROOT / "configs" / "ja" / "local").glob("*.yaml"))
# 64 training examples: enough for each of livedoor's 9 categories, which its dev data all have
SMALL = ["train.max_steps=1", "data.max_train_samples=64", "data.max_eval_samples=8", "train.batch_size=4"]


@pytest.mark.slow
@pytest.mark.parametrize("name", LOCAL)
def test_every_local_japanese_config_runs_on_the_pair(cli, pair, tmp_path, monkeypatch, name):
    """configs/ja/local/*.yaml as they are, on the shared data, with only the model (fine-tuning)
    or the tokenizer (pre-training from scratch) taken from the pair, and the run cut short."""
    tokenizer, model = pair
    monkeypatch.chdir(ROOT)  # the configs' paths are relative to the project root
    config = ROOT / "configs" / "ja" / "local" / f"{name}.yaml"
    settings = yaml.safe_load(config.read_text(encoding="utf-8"))
    for path in settings["data"].values():
        if isinstance(path, str) and path.startswith("../shared/data/"):
            shared(*path.removeprefix("../shared/data/").split("/"))
    sets = [*SMALL, f"output_dir={tmp_path / 'out'}"]
    if settings.get("mlm", {}).get("from_scratch"):
        sets.append(f"model.tokenizer={tokenizer}")
        if settings["data"]["train"] == "outputs/ja/corpus.txt":  # bench/ja_quality.py's: livedoor's bodies instead
            sets += [f"data.train={shared('ja', 'livedoor', 'train.jsonl.gz')}", "data.text_column=body"]
    else:
        sets.append(f"model.name={model}")
    task = settings["task"]
    code, out, err = cli("train", task, "-c", config, *(a for s in sets for a in ("--set", s)))
    assert code == 0, out + err
    info = json.loads((tmp_path / "out" / "bertkit.json").read_text())
    assert info["task"] == task and info["metrics"]["validation"]

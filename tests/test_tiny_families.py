"""`bertkit model tiny --family NAME`: a tiny model of a family built from its config class, with a
tokenizer of the family's kind learnt from a few sentences (test_tiny_families_matrix.py trains
them)."""

import json

import pytest

from bertkit.families import FAMILIES


def printed(out: str) -> dict[str, str]:
    rows = [line.split(None, 1) for line in out.splitlines() if line.strip()]
    return {row[0]: row[1] for row in rows if len(row) == 2}


@pytest.mark.parametrize("family", ["bert", "modernbert", "xlm-roberta"])  # WordPiece, BPE, Unigram
def test_a_family_from_its_name_loads_with_the_auto_classes(cli, tmp_path, family):
    from transformers import AutoModel, AutoTokenizer

    out = tmp_path / family
    code, stdout, err = cli("model", "tiny", "--family", family, "-o", out, "--hidden", "32", "--vocab-size", "300")
    assert code == 0, err
    shown = printed(stdout)
    assert shown["hidden"] == "32" and shown["layers"] == "2"
    assert f"{FAMILIES[family].kind} learnt from built-in sentences" in shown["vocabulary"]
    config = json.loads((out / "config.json").read_text())
    assert config["model_type"] == family and config["hidden_size"] == 32
    model, tokenizer = AutoModel.from_pretrained(out), AutoTokenizer.from_pretrained(out)
    assert model.config.vocab_size == len(tokenizer) <= 300
    encoded = tokenizer("Alice met Bruno in Paris.", "Which place?", return_offsets_mapping=True)
    assert max(encoded["input_ids"]) < model.config.vocab_size
    assert encoded["input_ids"][0] == tokenizer.cls_token_id and tokenizer.mask_token is not None
    ids = [i for i in encoded["input_ids"] if i not in tokenizer.all_special_ids]
    assert tokenizer.unk_token_id not in ids  # the built-in sentences cover these words
    model(**tokenizer(["a short text", "and a longer one"], padding=True, return_tensors="pt"))


def test_the_vocabulary_comes_from_the_text_given(cli, tmp_path):
    from transformers import AutoTokenizer

    text = tmp_path / "domain.txt"
    text.write_text("zygomorphic quokkas eat zygomorphic flowers\n" * 20)
    out = tmp_path / "tiny"
    assert cli("model", "tiny", "--family", "roberta", "-o", out, "--vocab-from", text)[0] == 0
    tokenizer = AutoTokenizer.from_pretrained(out)
    assert len(tokenizer.tokenize(" zygomorphic quokkas")) <= 3  # whole words learnt from the text
    assert tokenizer.model_input_names == ["input_ids", "attention_mask"]  # RoBERTa: one segment


SAME_SEED = ["bert", "albert", "xlm-roberta"]  # WordPiece, Unigram (two layouts)
# `bertkit model tiny --family F -o FOLDER/F --seed 3` for each family named, in one process
BUILD_EACH = (
    "import sys\nfrom bertkit.cli import main\nfor family in sys.argv[2:]:\n"
    "    try:\n        main(['model', 'tiny', '--family', family, '-o', sys.argv[1] + '/' + family, '--seed', '3'])\n"
    "    except SystemExit as stop:\n        assert stop.code in (0, None), (family, stop.code)\n"
)


@pytest.fixture(scope="module")
def built_in_two_processes(tmp_path_factory):
    """Every family of SAME_SEED built in each of two processes (one process builds them all: two
    starts of Python for the three checks, not six)."""
    import os
    import subprocess
    import sys

    folders = [tmp_path_factory.mktemp("first-process"), tmp_path_factory.mktemp("second-process")]
    for folder in folders:
        command = [sys.executable, "-c", BUILD_EACH, str(folder), *SAME_SEED]
        done = subprocess.run(command, capture_output=True, text=True, env={**os.environ, "HF_HUB_OFFLINE": "1"})
        assert done.returncode == 0, done.stderr
    return folders


@pytest.mark.spawns
@pytest.mark.parametrize("family", SAME_SEED)
def test_same_seed_same_model_in_every_process(built_in_two_processes, family):
    """Built twice in two processes: the same files, tokenizer included. The tokenizers library's
    trainers break ties in hash-map order, which changes between processes (its WordPiece trainer
    learnt other pieces, its Unigram trainer put them in another order): bertkit/core/stable_vocab.py
    settles them."""
    first, second = (folder / family for folder in built_in_two_processes)
    for name in ("model.safetensors", "tokenizer.json", "config.json"):
        assert (first / name).read_bytes() == (second / name).read_bytes(), name


@pytest.mark.parametrize(
    "args, message",
    [
        (["--family", "modernbet"], "did you mean 'modernbert'"),
        (["--family", "bert", "--from", "some/model"], "give one of them"),
        ([], "give --from MODEL"),
        (["--family", "bert", "--hidden", "30", "--heads", "4"], "not a multiple of --heads"),
        # rotary position embeddings turn pairs: an odd head size built a model that could not run
        (["--family", "modernbert", "--hidden", "30", "--heads", "2"], "use --hidden 32"),
        # under the alphabet: more entries than asked (WordPiece, byte-level BPE) or a trainer's traceback (Unigram)
        (["--family", "bert", "--vocab-size", "16"], "Use --vocab-size 65 or more"),
        (["--family", "roberta", "--vocab-size", "100"], "Use --vocab-size 261 or more"),
        (["--family", "albert", "--vocab-size", "30"], "Use --vocab-size 42 or more"),
        (["--family", "albert", "--vocab-size", "41"], "Use --vocab-size 42 or more"),  # trained, then too big
        (["--family", "xlm-roberta", "--min-frequency", "3"], "--min-frequency is for --from"),
    ],
)
def test_bad_requests_are_refused_by_name(cli, tmp_path, args, message):
    code, _, err = cli("model", "tiny", "-o", tmp_path / "out", *args)
    assert code == 2 and message in err, err
    assert not (tmp_path / "out").exists()


@pytest.mark.spawns
def test_a_family_name_in_any_case_and_nothing_printed_by_the_trainer(tmp_path):
    """`BERT` and `deberta_v2` name families; the tokenizers trainer's progress once wrote blank lines
    to standard output before the summary (and a closed pipe then panicked)."""
    import os
    import subprocess
    import sys

    command = [sys.executable, "-m", "bertkit", "model", "tiny", "--family", "Deberta_V2", "-o", str(tmp_path / "m")]
    done = subprocess.run(command, capture_output=True, text=True, env={**os.environ, "HF_HUB_OFFLINE": "1"})
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("from          deberta-v2"), repr(done.stdout[:80])
    assert json.loads((tmp_path / "m" / "config.json").read_text())["model_type"] == "deberta-v2"

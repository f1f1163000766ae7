"""`bertkit attention`: the weights as JSON (shape, rows that sum to 1), words merged by the
documented rule, the pictures, pairs, Japanese, and clear refusals."""

import json
import re
from pathlib import Path

import numpy as np
import pytest
from helpers.checks import assert_refused

from bertkit.attention import Attention, _piece_groups, merge_words

TEXT = "a great film about unbelievable things"


def weights_of(cli, model, *args):
    code, out, err = cli("attention", "-m", model, "--json", "-", *args)
    assert code == 0, err
    found = json.loads(out)
    return found["tokens"], np.asarray(found["attentions"])


def test_json_holds_every_layer_and_head_and_rows_sum_to_one(cli, tiny_model):
    tokens, weights = weights_of(cli, tiny_model, "-t", TEXT)
    assert tokens[0] == "[CLS]" and tokens[-1] == "[SEP]" and len(tokens) > len(TEXT.split()) + 2  # pieces
    assert "".join(tokens[1:-1]) == TEXT.replace(" ", "")  # each piece shown as the characters it covers
    assert weights.shape == (2, 2, len(tokens), len(tokens))  # the tiny BERT: 2 layers, 2 heads
    assert np.allclose(weights.sum(axis=-1), 1, atol=1e-4)


def test_words_merge_pieces_and_keep_rows_summing_to_one(cli, tiny_model):
    pieces, by_piece = weights_of(cli, tiny_model, "-t", TEXT)
    words, by_word = weights_of(cli, tiny_model, "-t", TEXT, "--words")
    assert words == ["[CLS]", "a", "great", "film", "about", "unbelievable", "things", "[SEP]"]
    assert np.allclose(by_word.sum(axis=-1), 1, atol=1e-4)
    # "unbelievable"'s pieces: those after "about" that spell it (the tiny tokenizer's pieces
    # depend on the texts it was trained on, examples/reviews among them)
    group, start = [], pieces.index("about") + 1
    while "".join(pieces[i] for i in group) != "unbelievable":
        group.append(start + len(group))
    assert len(group) > 1
    # what [CLS] takes from the word is the sum over its pieces
    assert np.allclose(by_word[:, :, 0, 5], by_piece[:, :, 0, group].sum(axis=-1), atol=1e-5)


def test_merging_rule_on_known_weights():
    weights = np.array([[[[0.5, 0.25, 0.25], [0.2, 0.3, 0.5], [0.1, 0.6, 0.3]]]])
    merged = merge_words(Attention(["[CLS]", "un", "##do"], weights), [[0], [1, 2]])
    assert merged.tokens == ["[CLS]", "undo"]
    assert np.allclose(merged.weights[0, 0], [[0.5, 0.5], [0.15, 0.85]])
    assert _piece_groups(["[CLS]", "東京", "##都", "[SEP]"]) == [[0], [1, 2], [3]]


def test_pictures_for_a_head_a_layer_and_every_layer(cli, tiny_model, tmp_path):
    for name, args in (("one", []), ("heads", ["--head", "all"]), ("layers", ["--layer", "all"])):
        picture = tmp_path / f"{name}.png"
        code, _, err = cli("attention", "-m", tiny_model, "-t", TEXT, "-o", picture, *args)
        assert code == 0, err
        assert picture.read_bytes()[:4] == b"\x89PNG"


def test_a_pair_and_a_model_with_a_task_head(cli, tiny_model, head_models):
    tokens, weights = weights_of(cli, tiny_model, "-t", "a great film", "--text-pair", "a dull film", "--words")
    assert tokens.count("[SEP]") == 2 and tokens.count("film") == 2
    assert np.allclose(weights.sum(axis=-1), 1, atol=1e-4)
    tokens, weights = weights_of(cli, head_models["ner"], "-t", "Peter went to Paris")
    assert weights.shape[:2] == (2, 2)


def test_japanese_text_with_a_slow_tokenizer(cli, tmp_path):
    from helpers.tiny import build_tiny_japanese_bert

    corpus = (Path(__file__).resolve().parents[1] / "examples" / "ja" / "corpus.txt").read_text(encoding="utf-8")
    model = build_tiny_japanese_bert(tmp_path / "ja", corpus.splitlines(), vocab_size=300)
    tokens, weights = weights_of(cli, model, "-t", "東京都に行きました。", "--words")
    assert tokens[0] == "[CLS]" and np.allclose(weights.sum(axis=-1), 1, atol=1e-4)
    picture = tmp_path / "ja.png"
    code, _, err = cli("attention", "-m", model, "-t", "東京都に行きました。", "-o", picture)
    assert code == 0, err


@pytest.mark.parametrize(
    "args, message",
    [
        (["-t", "word " * 200], "this model reads at most 128"),
        (["-t", TEXT, "--layer", "5"], "--layer 5: the model has 2"),
        (["-t", TEXT, "--head", "x"], "--head x: give a number"),
        (["-t", "   "], "--text is empty"),
        (["-t", TEXT, "-o", "attention.jpg"], "the picture is a PNG"),
    ],
)
def test_refusals(cli, tiny_model, args, message):
    code, _, err = cli("attention", "-m", tiny_model, *args)
    assert_refused(code, err, message)


def test_an_unwritable_json_names_its_option(cli, tiny_model, tmp_path):
    code, _, err = cli("attention", "-m", tiny_model, "-t", TEXT, "--json", tmp_path)
    assert_refused(code, err, f"--json {tmp_path} is a directory")


def test_a_byte_level_vocabulary_is_shown_as_the_text(tmp_path):
    """RoBERTa's vocabulary writes " café" as ĠcafÃ© and an emoji as four odd characters: the
    labels of the picture and the JSON showed them so (and --words dropped Ġ only after a word's
    first piece)."""
    from transformers import AutoModel

    from bertkit.attention import attention_of
    from bertkit.core.tokenization import load_tokenizer
    from bertkit.tiny_families import build_family
    from bertkit.tiny_models import Shape

    build_family("roberta", tmp_path / "roberta", Shape(2, 32, 2, 64))
    model, tokenizer = AutoModel.from_pretrained(tmp_path / "roberta"), load_tokenizer(str(tmp_path / "roberta"))
    text = "great café in Zürich 😀!"
    attention, groups = attention_of(model, tokenizer, text)
    assert not any(mark in token for token in attention.tokens for mark in ("Ġ", "Ã", "ð"))
    assert set("".join(attention.tokens[1:-1])) <= set(text + "␣")
    assert merge_words(attention, groups).tokens == ["<s>", "great", "café", "in", "Zürich", "😀!", "</s>"]


def test_every_head_of_every_layer_with_layer_all_and_head_all(cli, tiny_model, tmp_path):
    from bertkit.attention import Attention, select

    weights = np.random.default_rng(0).random((2, 3, 4, 4))
    matrices, titles = select(Attention(list("abcd"), weights), "all", "all")
    assert matrices.shape == (6, 4, 4) and titles[4] == "layer 1, head 1"
    assert np.allclose(matrices[4], weights[1, 1])
    picture = tmp_path / "grid.png"
    code, _, err = cli("attention", "-m", tiny_model, "-t", "a great film", "--layer", "all", "--head", "all",
                       "-o", picture)  # fmt: skip
    assert code == 0 and picture.read_bytes()[:4] == b"\x89PNG", err
    code, _, err = cli("attention", "-m", tiny_model, "-t", "a great film", "--layer", "all", "--head", "1")
    assert_refused(code, err, "--layer all draws each layer's mean")


def test_attention_json_numbers_have_six_decimals_at_most(cli, tiny_model):
    code, out, err = cli("attention", "-m", tiny_model, "-t", "a great film", "--json", "-")
    assert code == 0, err
    assert not re.search(r"\d\.\d{7,}", out), out[:300]
    weights = np.asarray(json.loads(out)["attentions"])
    assert np.allclose(weights.sum(axis=-1), 1, atol=1e-4)

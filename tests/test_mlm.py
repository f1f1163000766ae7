"""Masked-LM: masking rules, corpus reading, vocabularies, and mlm-adapt end to end (adapt a tiny
model, pre-train one from scratch, fine-tune a classifier from the result, fill in masks)."""

import json
import random

import pytest
from helpers.tiny import sentence


@pytest.fixture(scope="module")
def tokenizer(tiny_model):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(tiny_model)


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    rng = random.Random(3)
    path = tmp_path_factory.mktemp("corpus") / "domain.txt"
    path.write_text("\n".join(sentence(rng, label) for label in ["positive", "negative"] * 300) + "\n")
    return path


# ---------------------------------------------------------------- masking


def test_masking_follows_the_bert_rule(tokenizer):
    import torch

    from bertkit.tasks.mlm.masking import IGNORE, mask_tokens, special_positions

    ids = torch.tensor([tokenizer("the film was great and the hotel was lovely")["input_ids"]] * 4000)
    special = special_positions(ids, tokenizer)
    generator = torch.Generator().manual_seed(0)
    masked, labels = mask_tokens(ids, special, tokenizer, 0.15, False, generator)
    chosen = labels != IGNORE
    assert not chosen[special].any()  # [CLS] and [SEP] are never chosen
    share = chosen.sum().item() / (~special).sum().item()
    assert 0.14 < share < 0.16
    assert torch.equal(labels[chosen], ids[chosen])
    as_mask = (masked[chosen] == tokenizer.mask_token_id).float().mean().item()
    kept = (masked[chosen] == ids[chosen]).float().mean().item()
    assert 0.77 < as_mask < 0.83 and 0.08 < kept < 0.12  # the rest (~10%) are random tokens
    assert torch.equal(masked[~chosen], ids[~chosen])


def test_whole_word_masking_takes_every_piece_of_a_word(tokenizer):
    import torch

    from bertkit.tasks.mlm.masking import IGNORE, mask_tokens, special_positions

    text = "unbelievably wonderful superb delightful hotel"
    tokens = tokenizer.convert_ids_to_tokens(tokenizer(text)["input_ids"])
    assert any(t.startswith("##") for t in tokens), tokens  # the test needs words cut into pieces
    ids = torch.tensor([tokenizer(text)["input_ids"]] * 2000)
    special = special_positions(ids, tokenizer)
    _, labels = mask_tokens(ids, special, tokenizer, 0.3, True, torch.Generator().manual_seed(1))
    chosen = (labels != IGNORE).numpy()
    word = -1
    words = []
    for token in tokens:
        word += 0 if token.startswith("##") else 1
        words.append(word)
    for row in chosen:
        for w in set(words[1:-1]):
            positions = [i for i, x in enumerate(words) if x == w and 0 < i < len(tokens) - 1]
            assert len({bool(row[i]) for i in positions}) == 1  # all pieces or none
    assert 0.2 < chosen.mean() < 0.4


def test_fixed_masks_are_reproducible(tokenizer):
    from bertkit.tasks.mlm.masking import fixed_masks

    features = {"input_ids": [tokenizer("the film was great " * 5)["input_ids"]] * 20}
    first = fixed_masks(features, tokenizer, 0.15, False, seed=5)
    again = fixed_masks(features, tokenizer, 0.15, False, seed=5)
    other = fixed_masks(features, tokenizer, 0.15, False, seed=6)
    assert first["labels"] == again["labels"] and first["input_ids"] == again["input_ids"]
    assert first["labels"] != other["labels"]


@pytest.mark.parametrize("family", ["bert", "roberta"])
def test_training_scores_only_masked_positions_with_the_same_loss_and_gradients(family):
    import torch
    from transformers import BertConfig, BertForMaskedLM, RobertaConfig, RobertaForMaskedLM

    from bertkit.tasks.mlm.masked_positions import predict_masked_only

    size = {"vocab_size": 300, "hidden_size": 32, "num_hidden_layers": 2, "num_attention_heads": 2}
    size["intermediate_size"] = 64
    if family == "bert":
        build = lambda: BertForMaskedLM(BertConfig(**size))  # noqa: E731
    else:
        build = lambda: RobertaForMaskedLM(RobertaConfig(**size, max_position_embeddings=40, pad_token_id=1))  # noqa: E731
    torch.manual_seed(0)
    full = build()
    sparse = build()
    sparse.load_state_dict(full.state_dict())
    assert predict_masked_only(sparse)
    ids = torch.randint(5, 300, (4, 24))
    labels = torch.where(torch.rand(ids.shape) < 0.2, ids, torch.tensor(-100))
    labels[0, 3] = ids[0, 3]  # at least one position to predict
    seen = {}
    sparse_head = sparse.cls if family == "bert" else sparse.lm_head
    sparse_head.register_forward_hook(lambda module, args, out: seen.update(rows=out.shape[0]))
    for model in (full, sparse):
        model.train()
        torch.manual_seed(1)  # the same dropout in both
        model(input_ids=ids, attention_mask=torch.ones_like(ids), labels=labels).loss.backward()
    assert seen["rows"] == int((labels != -100).sum())  # the head saw the masked positions only
    torch.manual_seed(1)
    reference = full(input_ids=ids, labels=labels).loss
    torch.manual_seed(1)
    assert torch.allclose(sparse(input_ids=ids, labels=labels).loss, reference, atol=1e-6)
    for (name, a), (_, b) in zip(full.named_parameters(), sparse.named_parameters(), strict=True):
        assert torch.allclose(a.grad, b.grad, atol=1e-6), name
    sparse.eval()  # evaluation reads every position's logits: the model runs unchanged
    with torch.no_grad():
        assert sparse(input_ids=ids, labels=labels).logits.shape == (4, 24, 300)


def test_masked_only_scoring_leaves_other_models_alone():
    from transformers import BertConfig, BertForSequenceClassification

    from bertkit.tasks.mlm.masked_positions import predict_masked_only

    config = BertConfig(vocab_size=50, hidden_size=16, num_hidden_layers=1, num_attention_heads=2, intermediate_size=32)
    assert not predict_masked_only(BertForSequenceClassification(config))


# ---------------------------------------------------------------- corpus and examples


def test_corpus_paths_folders_globs_and_json(tmp_path):
    from bertkit.core.data.corpus import read_lines
    from bertkit.core.errors import BertkitError

    (tmp_path / "docs" / "more").mkdir(parents=True)
    (tmp_path / "docs" / "a.txt").write_text("first line\n\n  second line  \n")
    (tmp_path / "docs" / "more" / "b.txt").write_text("third\n")
    (tmp_path / "docs" / "notes.md").write_text("ignored\n")
    assert list(read_lines(str(tmp_path / "docs"))) == ["first line", "second line", "third"]
    assert list(read_lines(str(tmp_path / "docs" / "*.txt"))) == ["first line", "second line"]
    (tmp_path / "c.jsonl").write_text('{"body": "one"}\n{"body": "two"}\n')
    assert list(read_lines(str(tmp_path / "c.jsonl"), "body")) == ["one", "two"]
    with pytest.raises(BertkitError, match="record 1 has no 'text' field"):
        list(read_lines(str(tmp_path / "c.jsonl")))
    with pytest.raises(BertkitError, match="no file matches"):
        list(read_lines(str(tmp_path / "*.nothing")))


def test_blocks_and_lines(tokenizer):
    from bertkit.core.errors import BertkitError
    from bertkit.tasks.mlm.inputs import examples

    texts = ["the film was great and the hotel was lovely"] * 10
    info = {"mode": "blocks", "block_size": 16, "max_length": 16, "long_lines": "truncate"}
    train = examples(tokenizer, texts, info, "train")
    assert all(len(row["input_ids"]) == 16 for row in train)  # the ragged end is dropped
    assert train[0]["input_ids"][0] == tokenizer.cls_token_id and train[0]["input_ids"][-1] == tokenizer.sep_token_id
    validation = examples(tokenizer, texts, info, "validation")
    assert len(validation) >= len(train) and len(validation[-1]["input_ids"]) <= 16  # nothing dropped
    with pytest.raises(BertkitError, match="too few for one block of 16"):
        examples(tokenizer, ["short"], info, "train")
    long = ["word " * 40]
    lines = {**info, "mode": "lines"}
    assert [len(r["input_ids"]) for r in examples(tokenizer, long, lines, "train")] == [16]
    windows = examples(tokenizer, long, {**lines, "long_lines": "windows"}, "train")
    pieces = tokenizer("word " * 40, add_special_tokens=False)["input_ids"]
    assert sum(len(r["input_ids"]) - 2 for r in windows) == len(pieces)


def test_wordpiece_vocabulary(tmp_path, corpus, cli):
    from transformers import AutoTokenizer

    code, _, err = cli("tokenizer", "train", "-i", corpus, "-o", tmp_path / "tok", "--vocab-size", "120")
    assert code == 0, err
    tok = AutoTokenizer.from_pretrained(tmp_path / "tok")
    assert len(tok) == 120 and tok.mask_token == "[MASK]"
    assert tok.convert_ids_to_tokens(tok("The Hotel")["input_ids"]) == ["[CLS]", "the", "hotel", "[SEP]"]
    code, _, err = cli("tokenizer", "train", "-i", corpus, "-o", tmp_path / "big", "--vocab-size", "50000")
    assert code == 2 and "support a vocabulary of only" in err and "fewer than the 50,000 asked for" in err
    assert not (tmp_path / "big").exists()
    (tmp_path / "empty.txt").write_text("\n\n")
    code, _, err = cli("tokenizer", "train", "-i", tmp_path / "empty.txt", "-o", tmp_path / "e", "--vocab-size", "50")
    assert code == 2 and "input is empty" in err


# ---------------------------------------------------------------- end to end


def mlm_config(tmp_path, model, train, extra="  block_size: 32\n"):
    path = tmp_path / "mlm.yaml"
    path.write_text(
        f"task: mlm-adapt\nmodel:\n  name: {model}\n  max_length: 64\n"
        f"data:\n  train: {train}\n"
        "train:\n  epochs: 3\n  batch_size: 16\n  learning_rate: 1.0e-3\n  logging_steps: 5\n"
        f"mlm:\n{extra}"
        f"output_dir: {tmp_path / 'adapted'}\n"
    )
    return path


@pytest.mark.slow
def test_adapt_then_fill_masks_then_classify(tmp_path, tiny_model, corpus, easy_data, cli):
    code, out, err = cli("train", "mlm-adapt", "-c", mlm_config(tmp_path, tiny_model, corpus))
    assert code == 0, err
    assert "has no masked-LM head; a new one is trained" in " ".join(err.split())  # a bare BertModel
    bundle = tmp_path / "adapted"
    scores = json.loads((bundle / "metrics.json").read_text())
    assert scores["perplexity_after"] < 0.8 * scores["perplexity_before"]
    assert scores["validation"]["perplexity"] == scores["perplexity_after"]
    assert "perplexity went from" in (bundle / "README.md").read_text()
    assert (bundle / "training_curves.png").is_file()
    assert json.loads((bundle / "config.json").read_text())["architectures"] == ["BertForMaskedLM"]

    (tmp_path / "masked.txt").write_text("the hotel was [MASK] and the film was [MASK]\nthe [MASK] was boring\n")
    code, out, err = cli("predict", "-m", bundle, "-i", tmp_path / "masked.txt", "--top-k", "3")
    assert code == 0, err
    rows = [json.loads(line) for line in out.splitlines()]
    assert [len(r["masks"]) for r in rows] == [2, 1]
    assert all(len(m["candidates"]) == 3 for r in rows for m in r["masks"])
    assert "[MASK]" not in rows[0]["filled"] and rows[1]["filled"].endswith("was boring")
    (tmp_path / "plain.txt").write_text("the [MASK] was fine\nno mask in this line\n")
    code, _, err = cli("predict", "-m", bundle, "-i", tmp_path / "plain.txt", "-o", tmp_path / "p.jsonl")
    assert (
        code == 2
        and f"{tmp_path / 'plain.txt'}:2: no [MASK]" in " ".join(err.split())
        and not (tmp_path / "p.jsonl").exists()
    )

    code, out, err = cli("evaluate", "-m", bundle, "-d", corpus, "-o", tmp_path / "eval")
    assert code == 0, err
    assert json.loads((tmp_path / "eval" / "metrics.json").read_text())["perplexity"] < scores["perplexity_before"]

    # the bundle is a base model for the other tasks
    cls = tmp_path / "cls.yaml"
    cls.write_text(
        f"task: classify\nmodel:\n  name: {bundle}\n  max_length: 32\ndata:\n  train: {easy_data['train']}\n"
        f"  test: {easy_data['test']}\ntrain:\n  epochs: 6\n  batch_size: 16\n  learning_rate: 3.0e-3\n"
        f"  warmup_ratio: 0.0\n  seed: 7\noutput_dir: {tmp_path / 'cls'}\n"
    )
    code, _, err = cli("train", "classify", "-c", cls)
    assert code == 0, err
    assert json.loads((tmp_path / "cls" / "metrics.json").read_text())["test"]["accuracy"] >= 0.9


@pytest.mark.slow
def test_from_scratch_with_whole_words(tmp_path, corpus, cli):
    extra = (
        "  block_size: 32\n  from_scratch: true\n  vocab_size: 150\n  hidden_size: 32\n  num_layers: 1\n"
        "  num_heads: 2\n  intermediate_size: 64\n  whole_word_masking: true\n  initializer_range: 0.1\n"
        "  dropout: 0.0\n"
    )
    code, _, err = cli("train", "mlm-adapt", "-c", mlm_config(tmp_path, "unused-name", corpus, extra))
    assert code == 0, err
    bundle = tmp_path / "adapted"
    info = json.loads((bundle / "bertkit.json").read_text())
    assert info["base_model"] == "scratch" and info["whole_word_masking"]
    config = json.loads((bundle / "config.json").read_text())
    assert config["vocab_size"] == 150 and config["hidden_size"] == 32 and config["num_hidden_layers"] == 1
    assert config["initializer_range"] == 0.1
    # pre-trained without dropout, saved with BERT's dropout for fine-tuning
    assert config["hidden_dropout_prob"] == config["attention_probs_dropout_prob"] == 0.1
    assert not any(key.startswith("bertkit") for key in config)
    scores = json.loads((bundle / "metrics.json").read_text())
    assert scores["perplexity_after"] < 0.8 * scores["perplexity_before"]
    assert "pre-trained from scratch" in (bundle / "README.md").read_text()


def test_from_scratch_initial_weights_and_dropout_follow_the_config():
    from bertkit.config import load_config
    from bertkit.tasks.mlm.task import TASK

    cfg = load_config(None, task="mlm-adapt")
    cfg.mlm.from_scratch, cfg.mlm.hidden_size, cfg.mlm.num_heads, cfg.mlm.intermediate_size = True, 128, 2, 256
    info = {"vocab_size": 2000, "pad_token_id": 0}
    spreads = {}
    for init, dropout in ((0.02, 0.1), (0.1, 0.0)):
        cfg.mlm.initializer_range, cfg.mlm.dropout = init, dropout
        model = TASK.training.build_model(None, info, cfg)
        assert model.config.hidden_dropout_prob == model.config.attention_probs_dropout_prob == dropout
        spreads[init] = model.bert.encoder.layer[0].attention.self.query.weight.std().item()
        assert TASK.training.saved_model(model, {"from_scratch": True}).config.hidden_dropout_prob == 0.1  # as saved
    assert abs(spreads[0.02] - 0.02) < 0.002 and abs(spreads[0.1] - 0.1) < 0.01


@pytest.mark.parametrize(
    "content, extra, message",
    [
        ("\n\n", "", "no text in it"),
        ("tiny\n" * 10, "  block_size: 64\n", "too few for one block of 64"),
        ("the film\n" * 20, "  from_scratch: true\n  vocab_size: 9000\n", "support a vocabulary of only"),
    ],
)
def test_bad_mlm_input(tmp_path, tiny_model, cli, content, extra, message):
    data = tmp_path / "text.txt"
    data.write_text(content)
    code, _, err = cli("train", "mlm-adapt", "-c", mlm_config(tmp_path, tiny_model, data, extra))
    assert code == 2 and message in " ".join(err.split()), err
    assert not (tmp_path / "adapted").exists()


@pytest.mark.parametrize("kind", ["byte-level", "metaspace", "wordpiece"])
def test_fill_mask_shows_the_text_a_token_stands_for(kind):
    """A byte-level vocabulary writes " France" as ĠFrance and é as two odd characters, a
    SentencePiece one writes ▁ for the space: predict's candidates and `filled` showed those."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    from bertkit.tasks.mlm.inputs import described

    if kind == "wordpiece":
        tok = Tokenizer(models.WordPiece(unk_token="[UNK]"))
        tok.pre_tokenizer, tok.decoder = pre_tokenizers.BertPreTokenizer(), decoders.WordPiece()
        trainer = trainers.WordPieceTrainer(vocab_size=80, special_tokens=["[UNK]", "[MASK]"])
    else:
        tok = Tokenizer(models.BPE(unk_token="[UNK]"))
        byte_level = kind == "byte-level"
        tok.pre_tokenizer = pre_tokenizers.ByteLevel() if byte_level else pre_tokenizers.Metaspace()
        tok.decoder = decoders.ByteLevel() if byte_level else decoders.Metaspace()
        trainer = trainers.BpeTrainer(vocab_size=300, special_tokens=["[UNK]", "[MASK]"])
    tok.train_from_iterator(["the capital is café paris and playing"] * 20, trainer)
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="[UNK]", mask_token="[MASK]")
    wanted = fast(" café" if kind == "byte-level" else "café", add_special_tokens=False)["input_ids"]
    assert len(wanted) == 1, fast.convert_ids_to_tokens(wanted)
    ids = [wanted[0], *fast("playing", add_special_tokens=False)["input_ids"][-1:]]
    out = described({"text": "the capital is [MASK]."}, "text", ([ids], [[0.7, 0.2]]), fast)
    assert out["filled"] == "the capital is café."
    first, second = out["masks"][0]["candidates"]
    assert first == {"token": "café", "id": wanted[0], "score": 0.7}
    assert second["token"] and not {"Ġ", "▁", "#"} & set(second["token"]), second
    # each mask filled in its own place, even when a fill is the mask's own text
    two = described({"text": "[MASK] and [MASK]"}, "text", ([[fast.mask_token_id], wanted[:1]], [[0.5], [0.7]]), fast)
    assert two["filled"] == "[MASK] and café"


def test_fill_mask_never_offers_a_special_token():
    """A tiny model's best guess for a mask was once `<mask>` itself (then filled in as text)."""
    from types import SimpleNamespace

    import numpy as np
    import torch

    from bertkit.tasks.mlm.inputs import top_candidates

    tokenizer = SimpleNamespace(mask_token_id=4, all_special_ids=[0, 1, 2, 3, 4])
    logits = torch.tensor([[[0.0] * 4 + [9.0, 1.0, 2.0, 3.0], [0.0] * 8]])
    inputs = {"input_ids": np.array([[4, 7]])}
    ((top, _),) = top_candidates(tokenizer, 3)(SimpleNamespace(logits=logits), inputs, None)
    assert top.tolist() == [[7, 6, 5]]

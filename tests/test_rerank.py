"""The rerank task (a cross-encoder): its losses, ranks, groups and batches, its errors, and
`train rerank` then `search --rerank` end to end on a tiny model."""

import json
import random

import numpy as np
import pytest
from helpers.tiny import FILLER, NEGATIVE, POSITIVE

FILL = FILLER[:16]


def passage(rng, key):
    words = rng.choices(FILL, k=6)
    words.insert(rng.randrange(7), key)
    return " ".join(words)


# What a tiny random BERT learns in seconds: a passage with a word of praise is the relevant one.
# (Matching the query's own words takes a real model: bench/rerank_quality.py measures that on
# SQuAD with MiniLM.) The queries still vary, and the model reads each (query, passage) pair.


def write_groups(path, n, seed, negatives=3):
    """'about W' -> a positive holding a word of praise; negatives hold words of blame."""
    rng = random.Random(seed)
    with open(path, "w", encoding="utf-8") as handle:
        for _ in range(n):
            row = {
                "query": f"about {rng.choice(FILL)}",
                "positive": passage(rng, rng.choice(POSITIVE)),
                "negatives": [passage(rng, k) for k in rng.sample(NEGATIVE, negatives)],
            }
            handle.write(json.dumps(row) + "\n")
    return path


def write_labelled(path, n, seed):
    """The same task as (query, passage, label) rows: one relevant and two irrelevant per query."""
    rng = random.Random(seed)
    with open(path, "w", encoding="utf-8") as handle:
        for i in range(n):
            query = f"about {rng.choice(FILL)} {i}"
            words = [(rng.choice(POSITIVE), 1), *((k, 0) for k in rng.sample(NEGATIVE, 2))]
            for key, label in words:
                handle.write(json.dumps({"query": query, "passage": passage(rng, key), "label": label}) + "\n")
    return path


# ---------------------------------------------------------------- losses and ranks


def test_listwise_loss_is_cross_entropy_of_the_positive_over_its_group():
    import torch

    from bertkit.tasks.rerank.losses import listwise_loss

    logits = torch.tensor([[2.0], [0.5], [1.0], [0.0], [3.0]])  # group 1: 3 pairs, group 2: 2 pairs
    labels = torch.tensor([[1.0, 0.0, 0.0], [1.0, 0.0, -100.0]])
    want = (
        -torch.log_softmax(torch.tensor([2.0, 0.5, 1.0]), 0)[0] - torch.log_softmax(torch.tensor([0.0, 3.0]), 0)[0]
    ) / 2
    assert listwise_loss(logits, labels).item() == pytest.approx(want.item(), rel=1e-6)
    # a micro-batch holding 5 of a step's 10 pairs contributes half its mean
    assert listwise_loss(logits, labels, torch.tensor(10)).item() == pytest.approx(want.item() / 2, rel=1e-6)


def test_listwise_loss_has_gradients_only_for_real_pairs():
    import torch

    from bertkit.tasks.rerank.losses import listwise_loss

    logits = torch.zeros(3, 1, requires_grad=True)
    listwise_loss(logits, torch.tensor([[1.0, 0.0], [1.0, -100.0]])).backward()
    assert logits.grad[0, 0] < 0 < logits.grad[1, 0] and logits.grad[2, 0] == 0  # a lone positive learns nothing


def test_pointwise_loss_is_binary_cross_entropy():
    import torch

    from bertkit.tasks.rerank.losses import pointwise_loss

    logits, labels = torch.tensor([[1.0], [-2.0], [0.5]]), torch.tensor([1.0, 0.0, 0.4])
    want = torch.nn.functional.binary_cross_entropy_with_logits(logits[:, 0], labels)
    assert pointwise_loss(logits, labels).item() == pytest.approx(want.item(), rel=1e-6)


def test_ranks_of_groups_and_of_labelled_pairs():
    from bertkit.tasks.rerank.losses import group_ranks, group_scores, pair_ranks

    labels = np.array([[1, 0, 0, -100], [1, 0, 0, 0]], dtype=float)
    scores = group_scores(np.array([0.9, 0.1, 0.5, 0.2, 0.3, 0.1, 0.25]), labels)
    assert scores[0, 3] == -np.inf and group_ranks(scores).tolist() == [1, 3]
    assert group_ranks(np.zeros((1, 3))).tolist() == [3]  # ties count against the positive
    # query 0: relevant 0.8 below one irrelevant -> 2; query 1 has no irrelevant passage: left out
    ranks = pair_ranks([0.8, 0.9, 0.1, 0.5], [1, 0, 0, 1], [0, 0, 0, 1])
    assert ranks.tolist() == [2]


# ---------------------------------------------------------------- rows, features, batches


def test_negatives_come_from_lists_and_columns_without_blanks_or_the_positive():
    from bertkit.core.errors import BertkitError
    from bertkit.tasks.rerank.groups import negatives_of

    row = {"negatives": ["n1", "", None, "pos", "n2"], "hard": "n3", "none": None}
    assert negatives_of(row, ["negatives", "hard", "none"], "pos", "f:1") == ["n1", "n2", "n3"]
    with pytest.raises(BertkitError, match="f:2: 'negatives' holds dicts"):
        negatives_of({"negatives": [{"text": "x"}]}, ["negatives"], "pos", "f:2")


def test_group_features_and_the_collator(tiny_model):
    from bertkit.core.tokenization import load_tokenizer
    from bertkit.tasks.rerank.groups import GroupCollator, group_features

    tokenizer = load_tokenizer(str(tiny_model))
    groups = [("about great", ["great film", "awful film", "lovely"]), ("about boring", ["boring song", "lousy"])]
    features = group_features(tokenizer, groups, 16)
    assert [len(ids) for ids in features["input_ids"]] == [3, 2]
    assert features["labels"] == [[1.0, 0.0, 0.0], [1.0, 0.0]]
    first = tokenizer.convert_ids_to_tokens(features["input_ids"][0][1])
    words = tokenizer.convert_tokens_to_string(first)  # the pieces of the tiny vocabulary, joined back
    assert first[0] == "[CLS]" and first.count("[SEP]") == 2 and "awful" in words and "great" in words
    rows = [{k: v[i] for k, v in features.items()} for i in range(2)]
    batch = GroupCollator(tokenizer)(rows)
    assert batch["input_ids"].shape[0] == 5
    assert batch["labels"].tolist() == [[1.0, 0.0, 0.0], [1.0, 0.0, -100.0]]


def test_long_pairs_keep_the_query(tiny_model):
    from bertkit.core.tokenization import load_tokenizer
    from bertkit.tasks.rerank.groups import encode_pairs

    tokenizer = load_tokenizer(str(tiny_model))
    ids = encode_pairs(tokenizer, ["great film"], [" ".join(["song"] * 50)], 12)["input_ids"][0]
    assert len(ids) == 12 and tokenizer.convert_ids_to_tokens(ids)[1:4] == ["great", "film", "[SEP]"]


def test_config_takes_one_negative_column_as_a_name():
    from bertkit.tasks.rerank.settings import RerankConfig

    assert RerankConfig(negative_columns="hard").negative_columns == ["hard"]


def test_reorder_sorts_the_top_by_the_reranker_and_keeps_the_rest():
    from bertkit.embeddings.rerank import reorder

    hits = [{"index": i, "score": 1 - i / 10, "text": f"t{i}"} for i in range(4)]
    out = reorder(hits, 3, iter([0.1, 0.9, 0.5]), 4)
    assert [h["index"] for h in out] == [1, 2, 0, 3]
    assert [h["bi_rank"] for h in out] == [2, 3, 1, 4] and out[-1]["rerank_score"] is None
    assert [h["index"] for h in reorder(hits, 3, iter([0.1, 0.9, 0.5]), 2)] == [1, 2]


# ---------------------------------------------------------------- errors


def config(tmp_path, model, train, validation, extra="", pair="positive", label=""):
    path = tmp_path / "rerank.yaml"
    path.write_text(
        f"task: rerank\nmodel:\n  name: {model}\n  max_length: 32\n"
        f"data:\n  train: {train}\n  validation: {validation}\n  text_column: query\n  text_pair_column: {pair}\n"
        f"{label}"
        "train:\n  epochs: 2\n  batch_size: 8\n  learning_rate: 1.0e-3\n  head_learning_rate: 1.0e-3\n"
        "  warmup_ratio: 0.0\n  logging_steps: 5\n"
        f"output_dir: {tmp_path / 'reranker'}\n{extra}"
    )
    return path


def test_rows_without_negatives_or_labels_are_refused(tmp_path, tiny_model, cli):
    rows = tmp_path / "rows.jsonl"
    rows.write_text(json.dumps({"query": "q", "positive": "p"}) + "\n")
    code, _, err = cli("train", "rerank", "-c", config(tmp_path, tiny_model, rows, rows))
    assert code == 2 and "neither negatives" in err and "rerank.negative_columns" in " ".join(err.split())
    empty = tmp_path / "empty.jsonl"
    empty.write_text(json.dumps({"query": "q", "positive": "p", "negatives": ["p", ""]}) + "\n")
    code, _, err = cli("train", "rerank", "-c", config(tmp_path, tiny_model, empty, empty))
    assert code == 2 and "has no negatives" in err


def test_labels_out_of_range_are_refused(tmp_path, tiny_model, cli):
    rows = tmp_path / "rows.jsonl"
    rows.write_text(json.dumps({"query": "q", "passage": "p", "label": -1}) + "\n")
    code, _, err = cli(
        "train",
        "rerank",
        "-c",
        config(tmp_path, tiny_model, rows, rows, pair="passage", label="  label_column: label\n"),
    )
    assert code == 2 and "outside 0..1" in err and "rows.jsonl:1" in err


def test_search_refuses_a_reranker_that_is_not_one(tmp_path, tiny_model, classify_bundle_free, cli):
    corpus = tmp_path / "c.txt"
    corpus.write_text("a\nb\n")
    code, _, err = cli("search", "-m", tiny_model, "--corpus", corpus, "-q", "a", "--rerank", tmp_path / "nothing")
    assert code == 2 and "not found" in err
    code, _, err = cli("search", "-m", tiny_model, "--corpus", corpus, "-q", "a", "--rerank", classify_bundle_free)
    assert code == 2 and "not a cross-encoder" in err


@pytest.fixture
def classify_bundle_free(tmp_path, tiny_model):
    """A plain two-label sequence classifier (no training): a model that is no reranker."""
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    folder = tmp_path / "two-labels"
    AutoModelForSequenceClassification.from_pretrained(str(tiny_model), num_labels=2).save_pretrained(folder)
    AutoTokenizer.from_pretrained(str(tiny_model)).save_pretrained(folder)
    return folder


# ---------------------------------------------------------------- end to end


@pytest.mark.slow
def test_train_rerank_then_search_reorders_as_the_reranker_says(tmp_path, tiny_model, cli):
    train, dev = write_groups(tmp_path / "train.jsonl", 400, 1), write_groups(tmp_path / "dev.jsonl", 60, 2)
    code, out, err = cli("train", "rerank", "-c", config(tmp_path, tiny_model, train, dev))
    assert code == 0, err
    bundle = tmp_path / "reranker"
    info = json.loads((bundle / "bertkit.json").read_text())
    assert info["task"] == "rerank" and info["kind"] == "grouped"
    scores = json.loads((bundle / "metrics.json").read_text())["validation"]
    assert scores["recall_at_1"] >= 0.8  # chance is 0.25 (one positive among 4)

    code, out, err = cli("evaluate", "-m", bundle, "--data", dev, "-o", tmp_path / "eval")
    assert code == 0, err
    code, out, err = cli("predict", "-m", bundle, "--input", dev, "--text-pair-column", "positive")
    assert code == 0, err
    assert all("score" in json.loads(line) for line in out.splitlines())

    # the corpus: every dev passage; the tiny untrained bi-encoder finds the right one rarely
    rows = [json.loads(line) for line in dev.read_text().splitlines()][:20]
    texts = [p for r in rows for p in [r["positive"], *r["negatives"]]]
    corpus, queries = tmp_path / "corpus.txt", tmp_path / "queries.txt"
    corpus.write_text("\n".join(texts) + "\n")
    queries.write_text("\n".join(r["query"] for r in rows) + "\n")
    common = ("search", "-m", tiny_model, "--corpus", corpus, "--queries", queries, "--no-cache")
    code, out, err = cli(*common, "-k", "20")
    plain = [json.loads(line) for line in out.splitlines()]
    code, out, err = cli(*common, "-k", "5", "--rerank", bundle, "--rerank-top", "20")
    assert code == 0, err
    reranked = [json.loads(line) for line in out.splitlines()]
    for before, after in zip(plain, reranked, strict=True):
        assert len(after["hits"]) == 5
        got = [h["rerank_score"] for h in after["hits"]]
        assert got == sorted(got, reverse=True)
        for hit in after["hits"]:  # each hit is the search's candidate at bi_rank, with its score
            candidate = before["hits"][hit["bi_rank"] - 1]
            assert (candidate["index"], candidate["score"]) == (hit["index"], hit["score"])

    def right(records):
        return np.mean([any(w in texts[r["hits"][0]["index"]].split() for w in POSITIVE) for r in records])

    assert right(reranked) >= 0.8 and right(reranked) > right(plain) + 0.3

    # the same through an ANN index: the index's candidates, re-ordered by the same reranker
    pytest.importorskip("faiss")
    code, out, err = cli("index", "build", "-m", tiny_model, "--corpus", corpus, "-o", tmp_path / "idx")
    assert code == 0, err
    code, out, err = cli("search", "--index", tmp_path / "idx", "--queries", queries, "-k", "5", "--rerank", bundle,
                         "--rerank-top", "20")  # fmt: skip
    assert code == 0, err
    indexed = [json.loads(line) for line in out.splitlines()]
    assert [[h["index"] for h in r["hits"]] for r in indexed] == [[h["index"] for h in r["hits"]] for r in reranked]


@pytest.mark.slow
def test_train_rerank_on_labelled_pairs(tmp_path, tiny_model, cli):
    train, dev = write_labelled(tmp_path / "train.jsonl", 300, 1), write_labelled(tmp_path / "dev.jsonl", 40, 2)
    path = config(tmp_path, tiny_model, train, dev, pair="passage", label="  label_column: label\n")
    code, out, err = cli("train", "rerank", "-c", path)
    assert code == 0, err
    info = json.loads((tmp_path / "reranker" / "bertkit.json").read_text())
    assert info["kind"] == "pointwise" and info["score_max"] == 1.0
    scores = json.loads((tmp_path / "reranker" / "metrics.json").read_text())["validation"]
    assert scores["recall_at_1"] >= 0.8 and scores["queries"] == 40  # chance is 1/3
    code, out, err = cli("evaluate", "-m", tmp_path / "reranker", "--data", dev, "-o", tmp_path / "eval")
    assert code == 0, err


def test_evaluation_scores_survive_the_trainers_gathering():
    """Each batch's scores are laid out per group before the Trainer gathers them (it cuts the last
    batch to the dataset's rows, which would drop pairs of a flat list), and the places it pads
    with -100 hold no pair."""
    import torch
    from transformers import EvalPrediction

    from bertkit.tasks.rerank.task import TASK

    info = {"kind": "grouped"}
    labels = torch.tensor([[1.0, 0.0, 0.0], [1.0, 0.0, -100.0]])
    per_group = TASK.training.reduce_logits(torch.tensor([[0.1], [0.5], [0.2], [0.9], [0.3]]), labels)
    assert per_group.shape == (2, 3) and per_group[1, 2] == float("-inf")
    gathered = np.array([[0.1, 0.5, 0.2, -100.0], [0.9, 0.3, -100.0, -100.0], [-101.0, -100.0, -100.0, -100.0]])
    label_ids = np.array([[1, 0, 0, -100], [1, 0, -100, -100], [1, 0, -100, -100]], dtype=float)
    scores = TASK.training.metric_fn(info, None, None)(EvalPrediction(predictions=gathered, label_ids=label_ids))
    assert scores["recall_at_1"] == pytest.approx(1 / 3) and scores["queries"] == 3
    assert scores["mrr"] == pytest.approx((1 / 3 + 1 + 1 / 2) / 3)

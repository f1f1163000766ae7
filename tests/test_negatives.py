"""Hard negatives: the loss with them, reading them from training data, `bertkit mine-negatives`
(ranking, the false-negative ceiling, the output rows, its errors), and mining then training."""

import json
import random
import re

import numpy as np
import pytest
from test_embed import FILL, KEYS, embed_config, write_pairs

# ---------------------------------------------------------------- the loss


def test_hard_negatives_raise_the_loss_and_copies_of_the_positive_do_not_count():
    import torch

    from bertkit.tasks.embed.losses import in_batch_loss

    anchors = torch.tensor([[1.0, 0.0], [0.0, 1.0]])
    positives = torch.tensor([[1.0, 0.2], [0.0, 1.0]])
    groups = torch.tensor([0, 1])
    plain = in_batch_loss(anchors, positives, groups, 20.0)
    hard = torch.tensor([[1.0, 0.1]])  # closer to anchor 0 than its own positive
    with_hard = in_batch_loss(anchors, positives, groups, 20.0, hard, torch.tensor([2]))
    assert with_hard > plain + 0.3
    # the same vector, but it is anchor 0's positive text again: left out for anchor 0 (and, for
    # anchor 1, an ordinary far-away negative)
    copy = in_batch_loss(anchors, positives, groups, 20.0, hard, torch.tensor([0]))
    assert copy == pytest.approx(plain.item(), abs=1e-3)


def test_negatives_from_text_and_list_columns_and_their_errors():
    from bertkit.core.errors import BertkitError
    from bertkit.tasks.embed.negatives import negative_columns, negative_texts

    assert negative_columns(None) == [] and negative_columns("neg") == ["neg"]
    assert negative_columns(["a", "b"]) == ["a", "b"]
    split = {"n1": ["x", "y"], "n2": [["p", "q"], []]}
    assert negative_texts(split, ["n1", "n2"], ["f:1", "f:2"]) == [["x", "p", "q"], ["y"]]
    for column, match in (
        (["x", " "], "f:2: the negative column 'n' is empty"),
        (["x", None], "f:2: the negative column 'n' is empty"),
        ([["x"], ["ok", ""]], "f:2: the negative column 'n' holds a blank text"),
        ([["x"], [3]], "f:2: the negative column 'n' holds 3, not text"),
    ):
        with pytest.raises(BertkitError, match=match):
            negative_texts({"n": column}, ["n"], ["f:1", "f:2"])


def test_collator_puts_every_rows_negatives_in_one_batch(tiny_model):
    from bertkit.core.tokenization import load_tokenizer
    from bertkit.tasks.embed.pairs import PairCollator, pair_features

    tokenizer = load_tokenizer(str(tiny_model))
    import datasets

    split = datasets.Dataset.from_dict({
        "q": ["about alpha", "about bravo", "about golf"],
        "p": ["alpha film", "bravo book", "alpha film"],
        "neg": [["bravo book", "golf show"], [], ["echo song"]],
    })
    info = {"text_column": "q", "text_pair_column": "p", "max_length": 16, "pair_max_length": 16, "scored": False}
    info["negative_columns"] = ["neg"]
    columns = pair_features(tokenizer, split, info, "train")
    assert columns["pair_group"] == [0, 1, 0] and columns["negative_group"] == [[1, 2], [], [3]]
    rows = [{k: v[i] for k, v in columns.items()} for i in range(3)]
    batch = PairCollator(tokenizer)(rows)
    assert batch["negative_input_ids"].shape[0] == 3 and batch["negative_group"].tolist() == [1, 2, 3]
    assert "negative_input_ids" not in pair_features(tokenizer, split, info, "validation")  # ranks positives only
    none = PairCollator(tokenizer)([rows[1]])
    assert "negative_input_ids" not in none and none["input_ids"].shape[0] == 1


# ---------------------------------------------------------------- mining


class FakeEncoder:
    """Texts as fixed 2-d vectors: a text 'v:<angle in degrees>' points at that angle."""

    dimension = 2

    def encode(self, texts, batch_size=32):
        angles = np.radians([float(t.split(":")[1]) for t in texts])
        return np.stack([np.cos(angles), np.sin(angles)], axis=1).astype(np.float32)


def mined(rows, corpus, **options):
    from bertkit.embeddings.negatives import Mined, MineOptions, mine

    options = MineOptions(text_column="q", text_pair_column="p", **options).check()
    summary = Mined()
    encoder = FakeEncoder()
    from bertkit.core.pooling import unit_vectors

    out = list(mine(encoder, rows, corpus, unit_vectors(encoder, corpus), options, summary))
    return out, summary


def test_mining_skips_the_positive_and_likely_false_negatives():
    # anchor at 0 degrees, its positive at 25 (cosine 0.906); the ceiling 0.95 * 0.906 = 0.861 is
    # cos 30.6 degrees: 'v:10' and 'v:20' score above it, likely unlabelled positives
    corpus = ["v:10", "v:25", "", "v:20", "v:35", "v:50", "v:70", "v:50"]
    rows = [{"q": "v:0", "p": "v:25", "id": 7}]
    out, summary = mined(rows, corpus)
    assert out == [{"q": "v:0", "p": "v:25", "id": 7, "negatives": ["v:35", "v:50", "v:70"]}]  # copies once
    assert summary.skipped == 2 and summary.negatives == 3 and summary.short == 0
    out, _ = mined(rows, corpus, margin=0.0)  # a margin of 0: whatever scores above the positive
    assert out[0]["negatives"] == ["v:35", "v:50", "v:70"]
    out, _ = mined(rows, corpus, margin=-0.2)  # a negative margin lets everything through
    assert out[0]["negatives"] == ["v:10", "v:20", "v:35"]
    out, _ = mined(rows, corpus, margin=0.2, num_negatives=5)  # cos <= 0.706: 45 degrees or more
    assert out[0]["negatives"] == ["v:50", "v:70"]
    out, summary = mined(rows, corpus, range_min=4, num_negatives=2)  # ranks 4 on: 50, 50, 70
    assert out[0]["negatives"] == ["v:50", "v:70"] and summary.skipped == 0
    out, summary = mined(rows, corpus, range_max=3)  # the top 3 hold only the positive and two too close
    assert out[0]["negatives"] == [] and summary.short == 1


def test_mine_options_are_checked():
    from bertkit.core.errors import BertkitError
    from bertkit.embeddings.negatives import MineOptions

    for options, match in (
        ({"num_negatives": 0}, "--num-negatives 0"),
        ({"range_min": 5, "range_max": 5}, "must be larger"),
        ({"margin": 0.1, "max_score_ratio": 0.9}, "not both"),
        ({"max_score_ratio": 0.0}, "--max-score-ratio 0.0"),
    ):
        with pytest.raises(BertkitError, match=match):
            MineOptions(**options).check()


def write_corpus(path, n, seed):
    rng = random.Random(seed)
    lines = []
    for _ in range(n):
        words = rng.choices(FILL, k=6)
        words[1:1] = rng.sample(KEYS, 2)
        lines.append(" ".join(words))
    path.write_text("\n".join(lines) + "\n")
    return path


def test_mine_negatives_command(tmp_path, tiny_model, cli):
    pairs = write_pairs(tmp_path / "pairs.jsonl", 30, 5)
    corpus = write_corpus(tmp_path / "corpus.txt", 60, 6)
    out = tmp_path / "triplets.jsonl"
    args = ("mine-negatives", "-m", tiny_model, "--pairs", pairs, "--corpus", corpus, "-o", out, "--no-cache")
    columns = ("--text-column", "query", "--text-pair-column", "passage")
    code, _, err = cli(*args, *columns, "-n", "2")
    assert code == 0, err
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    source = [json.loads(line) for line in pairs.read_text().splitlines()]
    assert [{k: r[k] for k in ("query", "passage")} for r in rows] == source
    corpus_texts = set(corpus.read_text().splitlines())
    assert all(len(r["negatives"]) <= 2 and set(r["negatives"]) <= corpus_texts for r in rows)
    assert all(r["passage"] not in r["negatives"] for r in rows)
    # a random tiny model scores every text close to the positive, so the default ceiling (95% of the
    # positive's score) skips many: the summary counts what was written and what was skipped
    said = re.search(r"([\d,]+) negatives for 30 pairs written.*?([\d,]+) candidates skipped", " ".join(err.split()))
    assert said, err
    written, skipped = (int(n.replace(",", "")) for n in said.groups())
    assert written == sum(len(r["negatives"]) for r in rows) and skipped > 0
    # a ceiling above any score (--margin -1: the positive's score plus 1) skips nothing: 2 for every pair
    code, _, err = cli(*args, *columns, "-n", "2", "--margin", "-1", "--overwrite")
    assert code == 0, err
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert all(len(r["negatives"]) == 2 and r["passage"] not in r["negatives"] for r in rows)
    assert "0 candidates skipped" in " ".join(err.split())
    code, _, err = cli(*args, *columns)
    assert code == 2 and "already exists; pass --overwrite" in err
    code, _, err = cli(*args, *columns, "--overwrite")  # no corpus: the pairs' own positives
    assert code == 0, err
    code, _, err = cli(*args[:5], "-o", tmp_path / "own.jsonl", *columns)
    assert code == 0 and "distinct positives" not in err  # (a status line, gone when done)
    own = [json.loads(line) for line in (tmp_path / "own.jsonl").read_text().splitlines()]
    positives = {r["passage"] for r in source}
    assert all(set(r["negatives"]) <= positives - {r["passage"]} for r in own)
    code, _, err = cli(*args, "--overwrite")
    assert code == 2 and "no 'text' field" in err and "--text-column" in err
    code, _, err = cli(*args, "--overwrite", "--text-column", "query", "--text-pair-column", "passage", "--margin",
                       "0.1", "--max-score-ratio", "0.9")
    assert code == 2 and "not both" in err
    code, _, err = cli("mine-negatives", "-m", tiny_model, "--pairs", out, "-o", tmp_path / "again.jsonl", *columns)
    assert code == 2 and "already has a 'negatives' field" in err


# ---------------------------------------------------------------- training with negatives


def test_train_refuses_bad_negatives(tmp_path, tiny_model, cli):
    train = tmp_path / "train.jsonl"
    rows = [{"query": f"about {k}", "passage": f"the {k} film", "neg": ["a song"]} for k in KEYS]
    rows[3]["neg"] = []  # allowed: a pair without negatives of its own
    rows[5]["neg"] = [""]
    train.write_text("".join(json.dumps(r) + "\n" for r in rows))
    path = embed_config(tmp_path, tiny_model, train, train, extra="")
    code, _, err = cli("train", "embed", "-c", path, "--set", "data.negative_column=neg")
    assert code == 2 and f"{train}:6: the negative column 'neg' holds a blank text" in " ".join(err.split())
    code, _, err = cli("train", "embed", "-c", path, "--set", "data.negative_column=[neg, other]")
    assert code == 2 and "no column 'other'" in err and "data.negative_column" in err
    code, _, err = cli("train", "embed", "-c", path, "--set", "data.negative_column=neg", "--set", "embed.loss=cosine")
    assert code == 2 and "hard negatives go with embed.loss in_batch" in " ".join(err.split())
    code, _, err = cli("train", "embed", "-c", path, "--set", "data.negative_column=[]")
    assert code == 2 and "name the column(s) of negatives" in " ".join(err.split())


@pytest.mark.slow
def test_mine_then_train_then_search(tmp_path, tiny_model, cli):
    train, dev = write_pairs(tmp_path / "train.jsonl", 320, 11), write_pairs(tmp_path / "dev.jsonl", 80, 12)
    triplets = tmp_path / "triplets.jsonl"
    code, _, err = cli(
        "mine-negatives", "-m", tiny_model, "--pairs", train, "-o", triplets, "--text-column", "query",
        "--text-pair-column", "passage", "-n", "2", "--range-min", "2",
    )
    assert code == 0, err
    config = embed_config(tmp_path, tiny_model, triplets, dev, extra="")
    code, _, err = cli("train", "embed", "-c", config, "--set", "data.negative_column=negatives", "--set",
                       "train.epochs=3")
    assert code == 0, err
    bundle = tmp_path / "embedder"
    scores = json.loads((bundle / "metrics.json").read_text())["validation"]
    assert scores["mrr_after"] > scores["mrr_before"] + 0.05
    assert json.loads((bundle / "bertkit.json").read_text())["negative_columns"] == ["negatives"]
    corpus = write_corpus(tmp_path / "corpus.txt", 20, 13)
    code, out, err = cli("search", "-m", bundle, "--corpus", corpus, "-q", "about alpha bravo", "--no-cache", "-k", "2")
    assert code == 0 and len(json.loads(out)["hits"]) == 2
    code, _, err = cli("embed", "-m", bundle, "-i", corpus, "-o", tmp_path / "v.npy")
    assert code == 0 and np.load(tmp_path / "v.npy").shape == (20, 64)

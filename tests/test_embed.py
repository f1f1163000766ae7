"""Sentence embeddings: pooling, losses, retrieval scoring, vector files, similarity, search with
its cache, and `train embed` end to end on pairs and on scored pairs."""

import json
import random

import numpy as np
import pytest

KEYS = "alpha bravo charlie delta echo foxtrot golf hotel india juliet kilo lima mike oscar papa romeo".split()
FILL = "the a this that film book meal room phone game show song was is very quite".split()


def write_pairs(path, n, seed, scored=False):
    """'about K1 K2' -> a passage holding K1 and K2 among filler; scored pairs instead say how many
    of two keywords the passage shares with the query (0-2, scaled to 0-5)."""
    rng = random.Random(seed)
    with open(path, "w", encoding="utf-8") as handle:
        for _ in range(n):
            a, b = rng.sample(KEYS, 2)
            words = rng.choices(FILL, k=6)
            if scored:
                shared = rng.randint(0, 2)
                keep = [a, b][:shared] + rng.sample([k for k in KEYS if k not in (a, b)], 2 - shared)
                words[1:1] = keep
                row = {"query": f"about {a} {b}", "passage": " ".join(words), "score": 2.5 * shared}
            else:
                words[1:1] = [a, b]
                row = {"query": f"about {a} {b}", "passage": " ".join(words)}
            handle.write(json.dumps(row) + "\n")
    return path


@pytest.fixture(scope="module")
def texts():
    rng = random.Random(4)
    return [" ".join(rng.choices(FILL + KEYS, k=rng.randint(1, 30))) for _ in range(70)]


# ---------------------------------------------------------------- units


def test_pooling_modes():
    import torch

    from bertkit.core.pooling import pool

    class Out:
        last_hidden_state = torch.tensor([[[1.0, 2.0], [3.0, -4.0], [100.0, 100.0]]])
        pooler_output = torch.tensor([[0.5, 0.5]])

    mask = torch.tensor([[1, 1, 0]])  # the third position is padding
    assert pool(Out, mask, "mean").tolist() == [[2.0, -1.0]]
    assert pool(Out, mask, "max").tolist() == [[3.0, 2.0]]
    assert pool(Out, mask, "cls").tolist() == [[1.0, 2.0]]
    assert pool(Out, mask, "pooler").tolist() == [[0.5, 0.5]]


def test_in_batch_loss_ignores_copies_of_the_same_positive():
    import torch

    from bertkit.tasks.embed.losses import in_batch_loss

    anchors = torch.tensor([[1.0, 0.0], [1.0, 0.1], [0.0, 1.0]])
    positives = torch.tensor([[1.0, 0.05], [1.0, 0.05], [0.0, 1.0]])  # rows 0 and 1: the same text
    plain = in_batch_loss(anchors, positives, None, 20.0)
    grouped = in_batch_loss(anchors, positives, torch.tensor([0, 0, 1]), 20.0)
    assert grouped < 0.05 < plain  # counted as negatives, the copies cost ~log 2 each


def test_cosent_loss_rewards_the_right_order():
    import torch

    from bertkit.tasks.embed.losses import cosent_loss

    labels = torch.tensor([1.0, 0.5, 0.0])
    good = cosent_loss(torch.tensor([0.9, 0.5, 0.1]), labels, 20.0)
    bad = cosent_loss(torch.tensor([0.1, 0.5, 0.9]), labels, 20.0)
    assert good < 0.01 and bad > 10


def test_pair_metrics_rank_distinct_positives():
    from bertkit.tasks.embed.losses import pair_metrics

    first = np.array([[1.0, 0.0], [0.0, 1.0], [0.7, 0.7], [1.0, 0.1]])
    second = np.array([[1.0, 0.0], [0.0, 1.0], [0.0, 1.0], [1.0, 0.0]])  # rows 0 and 3: one positive
    result = pair_metrics(first, second, None, [0, 1, 1, 0], scored=False)
    assert result["queries"] == 4 and result["recall_at_1"] == 1.0  # row 2 ties, and a tie is not beaten
    first[2] = [1.0, 0.0]
    result = pair_metrics(first, second, None, [0, 1, 1, 0], scored=False)
    assert result["recall_at_1"] == 0.75 and result["mrr"] == pytest.approx((3 + 0.5) / 4)
    scored = pair_metrics(first, second, np.array([1.0, 1.0, 0.0, 0.5]), [0, 1, 2, 3], scored=True)
    assert "spearman" in scored


def test_top_hits_match_brute_force():
    from bertkit.embeddings.search import top_hits

    rng = np.random.default_rng(0)
    corpus, queries = rng.normal(size=(300, 8)), rng.normal(size=(20, 8))
    index, score = top_hits(queries, corpus, 5, block=7)
    full = queries @ corpus.T
    assert np.array_equal(index, np.argsort(-full, axis=1)[:, :5])
    assert np.allclose(score, np.sort(full, axis=1)[:, ::-1][:, :5])
    assert top_hits(queries, corpus[:3], 5)[0].shape == (20, 3)


# ---------------------------------------------------------------- bertkit embed / similarity / search


def test_embed_files_keep_input_order(tmp_path, tiny_model, texts, cli):
    import pyarrow.parquet as pq

    from bertkit.tasks.embed.encoder import load_encoder

    source = tmp_path / "texts.txt"
    source.write_text("\n".join(texts) + "\n")
    for name in ("v.npy", "v.parquet", "v.jsonl"):
        code, _, err = cli("embed", "-m", tiny_model, "-i", source, "-o", tmp_path / name, "-b", "8", "--normalize")
        assert code == 0, err
    vectors = np.load(tmp_path / "v.npy")
    assert vectors.shape == (70, 64) and vectors.dtype == np.float32
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1, atol=1e-5)
    table = pq.read_table(tmp_path / "v.parquet")
    assert table.column("text").to_pylist() == texts
    assert np.allclose(np.array(table.column("embedding").to_pylist()), vectors, atol=1e-6)
    lines = [json.loads(line) for line in (tmp_path / "v.jsonl").read_text().splitlines()]
    assert [x["text"] for x in lines] == texts and np.allclose([x["embedding"] for x in lines], vectors, atol=1e-6)
    # one text at a time (no batching, no sorting, no padding) gives the same vectors
    encoder = load_encoder(str(tiny_model), normalize=True)
    for i in (0, 17, 69):
        assert np.allclose(encoder.encode([texts[i]], 1)[0], vectors[i], atol=1e-5)
    # mean pooling of the model's own token vectors
    import torch

    batch = encoder.tokenizer([texts[3]], return_tensors="pt")
    with torch.no_grad():
        tokens = encoder.model(**batch).last_hidden_state[0]
    expected = tokens.mean(0) / tokens.mean(0).norm()
    assert np.allclose(expected.numpy(), vectors[3], atol=1e-5)


def test_embed_streams_in_chunks(tmp_path, tiny_model, texts):
    from bertkit.embeddings.embed import embed_file
    from bertkit.tasks.embed.encoder import load_encoder

    source = tmp_path / "texts.txt"
    source.write_text("\n".join(texts) + "\n")
    encoder = load_encoder(str(tiny_model))
    for name in ("a.npy", "a.jsonl"):
        assert embed_file(encoder, str(source), str(tmp_path / name), chunk_size=16, batch_size=5) == 70
    whole = encoder.encode(texts)
    assert np.allclose(np.load(tmp_path / "a.npy"), whole, atol=1e-5)
    rows = [json.loads(line) for line in (tmp_path / "a.jsonl").read_text().splitlines()]
    assert [r["text"] for r in rows] == texts and np.allclose([r["embedding"] for r in rows], whole, atol=1e-5)
    assert not [p.name for p in tmp_path.iterdir() if p.name.startswith(".")]  # no temporary files left


def test_embed_errors(tmp_path, tiny_model, cli):
    (tmp_path / "empty.txt").write_text("")
    code, _, err = cli("embed", "-m", tiny_model, "-i", tmp_path / "empty.txt", "-o", tmp_path / "v.npy")
    assert code == 2 and "no texts to embed" in err and not (tmp_path / "v.npy").exists()
    code, _, err = cli("embed", "-m", tiny_model, "-i", tmp_path / "empty.txt", "-o", tmp_path / "v.csv")
    assert code == 2 and ".npy, .parquet or .jsonl" in err
    (tmp_path / "t.jsonl").write_text('{"body": "x"}\n')
    code, _, err = cli("embed", "-m", tiny_model, "-i", tmp_path / "t.jsonl", "-o", tmp_path / "v.npy")
    assert code == 2 and "record 1 has no 'text' field" in err
    code, _, err = cli("embed", "-m", tiny_model, "-i", tmp_path / "t.jsonl", "-o", tmp_path / "v.npy", "--pooling=x")
    assert code == 2 and "mean, cls, max, pooler" in err


def test_long_texts_are_cut_and_said_once(tmp_path, tiny_model, cli):
    (tmp_path / "long.txt").write_text(("film " * 300 + "\n") * 3 + "short one\n")
    code, _, err = cli("embed", "-m", tiny_model, "-i", tmp_path / "long.txt", "-o", tmp_path / "v.npy")
    assert code == 0, err
    assert " ".join(err.split()).count("3 texts were longer than 128 tokens") == 1


def test_similarity_pairs_and_matrix(tmp_path, tiny_model, cli):
    pairs = tmp_path / "pairs.csv"
    pairs.write_text("text,text_pair\nthe film,the film\nthe film,alpha bravo kilo\n")
    code, out, err = cli("similarity", "-m", tiny_model, "-i", pairs)
    assert code == 0, err
    rows = [json.loads(line) for line in out.splitlines()]
    assert rows[0]["score"] == pytest.approx(1.0, abs=1e-5) and rows[1]["score"] < rows[0]["score"]
    code, _, err = cli("similarity", "-m", tiny_model, "-i", pairs, "--text-pair-column", "other")
    assert code == 2 and "record 1 has no 'other' field" in err and "--matrix" in err
    listing = tmp_path / "list.txt"
    listing.write_text("the film\nthe book\nalpha bravo\n")
    out_file, png = tmp_path / "m.jsonl", tmp_path / "m.png"
    code, _, err = cli("similarity", "-m", tiny_model, "-i", listing, "--matrix", "--heatmap", png, "-o", out_file)
    assert code == 0, err
    matrix = np.array([json.loads(line)["scores"] for line in out_file.read_text().splitlines()])
    assert matrix.shape == (3, 3) and np.allclose(matrix, matrix.T, atol=1e-5) and np.allclose(np.diag(matrix), 1)
    assert png.stat().st_size > 1000


def test_a_pair_gets_the_same_cosine_from_every_command(tmp_path, tiny_model, cli):
    """similarity's pairs, its matrix, search and search --index report one number for one pair
    (the matrix differed from the pairs and from search in the sixth decimal: float32 sums of the
    same products in another order)."""
    pytest.importorskip("faiss")
    texts = ["the film was lovely", "the book was boring", "alpha bravo kilo", "a lovely film", "boring book"]
    listing = tmp_path / "list.txt"
    listing.write_text("\n".join(texts) + "\n")
    pairs = tmp_path / "pairs.jsonl"
    wanted = [(i, j) for i in range(len(texts)) for j in range(len(texts)) if i != j]
    pairs.write_text("".join(json.dumps({"text": texts[i], "text_pair": texts[j]}) + "\n" for i, j in wanted))
    code, out, err = cli("similarity", "-m", tiny_model, "-i", pairs)
    assert code == 0, err
    by_pair = {pair: json.loads(line)["score"] for pair, line in zip(wanted, out.splitlines(), strict=True)}
    code, out, err = cli("similarity", "-m", tiny_model, "-i", listing, "--matrix")
    assert code == 0, err
    matrix = [json.loads(line)["scores"] for line in out.splitlines()]
    assert all(matrix[i][j] == by_pair[i, j] for i, j in wanted)
    asked = [a for text in texts for a in ("-q", text)]
    code, out, err = cli("search", "-m", tiny_model, "--corpus", listing, "--no-cache", "-k", "5", *asked)
    assert code == 0, err
    code, _, err = cli("index", "build", "-m", tiny_model, "--corpus", listing, "-o", tmp_path / "idx")
    assert code == 0, err
    code, indexed, err = cli("search", "--index", tmp_path / "idx", "-k", "5", *asked)
    assert code == 0, err
    for found in (out, indexed):
        for i, line in enumerate(found.splitlines()):
            hits = {hit["index"]: hit["score"] for hit in json.loads(line)["hits"] if hit["index"] != i}
            assert hits == {j: by_pair[i, j] for j in hits} and len(hits) == len(texts) - 1, (i, hits)


def test_search_and_its_cache(tmp_path, tiny_model, texts, cli):
    corpus = tmp_path / "docs.txt"
    corpus.write_text("\n".join(texts) + "\n")
    cache = tmp_path / "cache"
    args = ("search", "-m", tiny_model, "--corpus", corpus, "--cache-dir", cache, "-k", "3")
    code, out, err = cli(*args, "-q", texts[5], "-q", texts[9])
    assert code == 0, err
    hits = [json.loads(line) for line in out.splitlines()]
    assert [h["query"] for h in hits] == [texts[5], texts[9]]
    assert hits[0]["hits"][0]["text"] == texts[5] and hits[0]["hits"][0]["score"] == pytest.approx(1, abs=1e-5)
    assert len(hits[1]["hits"]) == 3 and hits[1]["hits"][0]["score"] >= hits[1]["hits"][1]["score"]
    assert len(list(cache.glob("*.npy"))) == 1 and "reused" not in err
    (tmp_path / "q.txt").write_text(texts[9] + "\n")
    code, _, err = cli(*args, "--queries", tmp_path / "q.txt", "-o", tmp_path / "hits.jsonl")
    assert code == 0 and "corpus embeddings reused" in " ".join(err.split())
    again = json.loads((tmp_path / "hits.jsonl").read_text())["hits"]
    assert [h["index"] for h in again] == [h["index"] for h in hits[1]["hits"]]
    assert [h["score"] for h in again] == pytest.approx([h["score"] for h in hits[1]["hits"]], abs=1e-5)
    corpus.write_text("\n".join(texts[:10]) + "\n")  # a changed corpus is embedded again
    code, out, err = cli(*args, "-q", texts[5])
    assert code == 0 and "reused" not in err and len(list(cache.glob("*.npy"))) == 2
    assert all(h["index"] < 10 for h in json.loads(out)["hits"])
    code, _, err = cli("search", "-m", tiny_model, "--corpus", corpus)
    assert code == 2 and "--query" in err


# ---------------------------------------------------------------- train embed


def embed_config(tmp_path, model, train, validation, extra=""):
    path = tmp_path / "embed.yaml"
    path.write_text(
        f"task: embed\nmodel:\n  name: {model}\n  max_length: 32\n"
        f"data:\n  train: {train}\n  validation: {validation}\n  text_column: query\n  text_pair_column: passage\n"
        "  label_column: score\n"
        "train:\n  epochs: 4\n  batch_size: 16\n  learning_rate: 1.0e-3\n  warmup_ratio: 0.0\n  logging_steps: 5\n"
        f"output_dir: {tmp_path / 'embedder'}\n{extra}"
    )
    return path


def untrained(tiny_model, dev, scored):
    from bertkit.tasks.embed.encoder import load_encoder
    from bertkit.tasks.embed.losses import pair_metrics
    from bertkit.tasks.embed.pairs import group_ids

    rows = [json.loads(line) for line in dev.read_text().splitlines()]
    encoder = load_encoder(str(tiny_model))
    first = encoder.encode([r["query"] for r in rows])
    second = encoder.encode([r["passage"] for r in rows])
    labels = np.array([r.get("score", 1.0) for r in rows]) / 5
    return pair_metrics(first, second, labels, group_ids([r["passage"] for r in rows]), scored)


@pytest.mark.slow
def test_train_on_pairs_improves_retrieval(tmp_path, tiny_model, cli):
    train, dev = write_pairs(tmp_path / "train.jsonl", 480, 1), write_pairs(tmp_path / "dev.jsonl", 100, 2)
    code, _, err = cli("train", "embed", "-c", embed_config(tmp_path, tiny_model, train, dev))
    assert code == 0, err
    bundle = tmp_path / "embedder"
    scores = json.loads((bundle / "metrics.json").read_text())["validation"]
    before = untrained(tiny_model, dev, scored=False)  # 0.68-0.74 (the tiny vocabulary varies a little)
    assert scores["mrr"] > before["mrr"] + 0.05 and scores["recall_at_5"] > before["recall_at_5"]
    assert scores["mrr_before"] == pytest.approx(before["mrr"], abs=1e-4) and scores["mrr_after"] == scores["mrr"]
    assert "Validation mrr went from" in (bundle / "README.md").read_text()
    info = json.loads((bundle / "bertkit.json").read_text())
    assert info["pooling"] == "mean" and info["loss"] == "in_batch" and info["normalize"]
    assert json.loads((bundle / "config.json").read_text())["architectures"] == ["BertModel"]
    # bertkit embed uses the bundle's pooling and normalisation (a plain model is not normalised)
    (tmp_path / "one.txt").write_text("about alpha bravo\n")
    code, _, err = cli("embed", "-m", bundle, "-i", tmp_path / "one.txt", "-o", tmp_path / "v.npy")
    assert code == 0 and "pooling mean, normalised, settings from bertkit.json" in " ".join(err.split())
    code, out, err = cli("predict", "-m", bundle, "-i", tmp_path / "one.txt")
    assert code == 0 and len(json.loads(out)["embedding"]) == 64
    code, out, err = cli("evaluate", "-m", bundle, "-d", dev, "-o", tmp_path / "eval")
    assert code == 0, err
    again = json.loads((tmp_path / "eval" / "metrics.json").read_text())
    assert again["mrr"] == pytest.approx(scores["mrr"], abs=1e-4)


@pytest.mark.slow
def test_train_on_scored_pairs_improves_correlation(tmp_path, tiny_model, cli):
    train = write_pairs(tmp_path / "train.jsonl", 480, 3, scored=True)
    dev = write_pairs(tmp_path / "dev.jsonl", 120, 4, scored=True)
    code, _, err = cli("train", "embed", "-c", embed_config(tmp_path, tiny_model, train, dev))
    assert code == 0, err
    info = json.loads((tmp_path / "embedder" / "bertkit.json").read_text())
    assert info["loss"] == "cosent" and info["score_max"] == 5.0
    scores = json.loads((tmp_path / "embedder" / "metrics.json").read_text())["validation"]
    before = untrained(tiny_model, dev, scored=True)["spearman"]
    # learned: at least half of the way from the untrained model's correlation to a perfect one
    assert scores["spearman"] > 0.6 and 1 - scores["spearman"] < (1 - before) / 2, (before, scores)
    assert scores["spearman_before"] == pytest.approx(before, abs=1e-4)


def test_bad_pairs(tmp_path, tiny_model, cli):
    train = write_pairs(tmp_path / "train.jsonl", 40, 1)
    path = embed_config(tmp_path, tiny_model, train, train)
    code, _, err = cli("train", "embed", "-c", path, "--set", "data.text_pair_column=positive")
    assert code == 2 and "no column 'positive'" in err and "(validation data)" not in err
    code, _, err = cli("train", "embed", "-c", path, "--set", "data.text_pair_column=null")
    assert code == 2 and "needs pairs" in err
    code, _, err = cli("train", "embed", "-c", path, "--set", "embed.loss=cosent")
    assert code == 2 and "needs a score for each pair" in err
    assert not (tmp_path / "embedder").exists()


def test_a_hub_sentence_encoder_is_read_with_its_own_pooling(tmp_path, tiny_model, monkeypatch):
    """A Hub id's sentence-transformers files (fetched into the cache) give its pooling, its
    normalisation and its max_seq_length, as a folder's do; offline without them, the defaults and a note."""
    from test_classify_fewshot import sentence_encoder_in_hub_cache

    from bertkit.core.progress import console
    from bertkit.tasks.embed.encoder import load_encoder

    snapshot = sentence_encoder_in_hub_cache(monkeypatch, tmp_path / "hub", "acme/cls-encoder", tiny_model, "cls", True)
    hub = load_encoder("acme/cls-encoder")
    assert (hub.settings.pooling, hub.settings.normalize, hub.settings.max_length) == ("cls", True, 24)
    local = load_encoder(str(snapshot))
    texts = ["the room was lovely", "awful plot"]
    assert np.allclose(hub.encode(texts), local.encode(texts))
    (snapshot / "1_Pooling" / "config.json").unlink()  # modules.json cached, its pooling module's settings not
    with console.capture() as said:
        unknown = load_encoder("acme/cls-encoder")
    assert (unknown.settings.pooling, unknown.settings.normalize) == ("mean", False)
    assert "its pooling is not known" in " ".join(said.get().split())
    absent = tmp_path / "hub" / "models--acme--cls-encoder" / ".no_exist" / ("0" * 40) / "1_Pooling"
    absent.mkdir(parents=True)
    (absent / "config.json").touch()  # the Hub said the pooling module has no settings: still not known
    with console.capture() as said:
        load_encoder("acme/cls-encoder")
    assert "its pooling is not known" in " ".join(said.get().split())
    for file in ("modules.json", "sentence_bert_config.json"):  # nothing of sentence-transformers cached
        (snapshot / file).unlink()
    with console.capture() as said:
        load_encoder("acme/cls-encoder")
    assert "its pooling is not known" in " ".join(said.get().split())
    # the cache records that the Hub has no modules.json: a plain model, nothing to say
    (absent.parent / "modules.json").touch()
    with console.capture() as said:
        plain = load_encoder("acme/cls-encoder")
    assert (plain.settings.pooling, plain.settings.normalize) == ("mean", False) and "note" not in said.get()


def test_a_dense_module_bertkit_does_not_apply_is_said(tmp_path, tiny_model):
    import shutil

    from bertkit.core.progress import console
    from bertkit.tasks.embed.encoder import model_settings

    folder = tmp_path / "st"
    shutil.copytree(tiny_model, folder)
    modules = [{"type": "sentence_transformers.models.Pooling", "path": "1_Pooling"},
               {"type": "sentence_transformers.models.Dense", "path": "2_Dense"}]  # fmt: skip
    (folder / "modules.json").write_text(json.dumps(modules))
    with console.capture() as said:
        model_settings(str(folder), None)
    assert "lists a Dense module" in " ".join(said.get().split())

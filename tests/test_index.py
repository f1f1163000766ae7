"""`bertkit index build / add` and `bertkit search --index`: the HNSW and IVF indexes against exact search,
what the index folder keeps, numbering across `index add`, and the errors a user can cause."""

from __future__ import annotations

import json
import random
import shutil
import sys

import numpy as np
import pytest

pytest.importorskip("faiss")

WORDS = "the a film book meal room phone game show song hotel trip great awful quite very and but".split()


@pytest.fixture(scope="module")
def corpus_texts():
    rng = random.Random(7)
    return [" ".join(rng.choices(WORDS, k=rng.randint(2, 12))) for _ in range(120)]


@pytest.fixture
def model_copy(tmp_path, tiny_model):
    """A model of its own, to change under an index."""
    return shutil.copytree(tiny_model, tmp_path / "model")


def write_lines(path, lines):
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def current_file(folder, name: str):
    """A data file of the index's current generation (the one its index.json names)."""
    generation = json.loads((folder / "index.json").read_text(encoding="utf-8"))["generation"]
    return folder / generation / name


def hits_of(out: str) -> list[dict]:
    return [json.loads(line) for line in out.splitlines()]


def ranking(out: str) -> list[list[tuple[float, int]]]:
    """Each query's hits as (score to 5 places, line), best first and ties by line: the index
    re-scores exactly, but a random tiny model gives texts scores equal to 6 places, which the two
    searches may list in either order."""
    return [sorted((-round(h["score"], 5), h["index"]) for h in r["hits"]) for r in hits_of(out)]


# ---------------------------------------------------------------- the library alone


@pytest.mark.parametrize("quantized", [True, False])
def test_graph_finds_what_exact_search_finds_and_survives_saving(tmp_path, quantized):
    from bertkit.core.pooling import unit_rows
    from bertkit.embeddings import ann
    from bertkit.embeddings.search import top_hits

    rng = np.random.default_rng(0)
    corpus = unit_rows(rng.normal(size=(400, 16))).astype(np.float32)
    queries = unit_rows(rng.normal(size=(30, 16))).astype(np.float32)
    keys = np.arange(400, dtype=np.uint64) * 3 + 5  # keys are corpus positions, not row numbers
    index = ann.new(16, ann.Params(ef_search=400, quantized=quantized))
    ann.add(index, keys[:100], corpus[:100])  # the 8-bit ranges come from these first ones
    ann.add(index, keys[100:], corpus[100:])
    ann.save(index, tmp_path / ann.FILE)
    again = ann.load(tmp_path / ann.FILE, 16)
    expected, scores = top_hits(queries, corpus, 5)
    for graph in (index, again):
        found, values = ann.search(graph, queries, 5, 400)
        assert np.array_equal(found, expected * 3 + 5)
        assert np.allclose(values, scores, atol=1e-5)  # exact scores, re-scored when the walk was 8-bit
    assert ann.describe(ann.Params(quantized=quantized))["kind"] == ("HNSW-SQ8" if quantized else "HNSW")
    found, _ = ann.search(again, queries[:2], 500, 16)  # more asked than held: -1 pads
    assert (found[:, :400] >= 0).all() and (found[:, 400:] == -1).all()
    with pytest.raises(Exception, match="holds vectors of 16 dimensions, its index.json says 8"):
        ann.load(tmp_path / ann.FILE, 8)
    (tmp_path / "bad").write_bytes(b"not an index")
    with pytest.raises(Exception, match="cannot be read as a FAISS index"):
        ann.load(tmp_path / "bad", 16)


def recall(found, expected) -> float:
    return float(np.mean([len(set(f) & set(e)) / len(e) for f, e in zip(found, expected, strict=True)]))


def test_ivf_index_finds_what_exact_search_finds_and_survives_saving(tmp_path):
    from bertkit.core.pooling import unit_rows
    from bertkit.embeddings import ann
    from bertkit.embeddings.search import top_hits

    rng = np.random.default_rng(1)
    centres = rng.normal(size=(20, 16))
    corpus = unit_rows(centres[rng.integers(0, 20, 3000)] + 0.5 * rng.normal(size=(3000, 16))).astype(np.float32)
    queries = unit_rows(centres[rng.integers(0, 20, 40)] + 0.5 * rng.normal(size=(40, 16))).astype(np.float32)
    params = ann.resolve(ann.Params(kind="ivf", lists=16), 16, 3000)
    assert (params.kind, params.lists, params.probes) == ("ivf", 16, 4)  # a quarter of the lists by default
    assert ann.describe(params) == {
        "library": "faiss", "version": ann.require().__version__, "kind": "IVF-PQ4FS", "rescore": ann.IVF_RESCORE,
        "lists": 16, "probes": 4,
    }  # fmt: skip
    index = ann.new(16, params)
    keys = np.arange(3000, dtype=np.uint64) * 2 + 1  # keys are corpus positions, not row numbers
    ann.add(index, keys[:2000], corpus[:2000])  # the lists are learnt from these first ones
    ann.add(index, keys[2000:], corpus[2000:])
    ann.save(index, tmp_path / ann.FILE)
    again = ann.load(tmp_path / ann.FILE, 16)
    expected, _ = top_hits(queries, corpus, 5)
    for loaded in (index, again):
        found, values = ann.search(loaded, queries, 5, 16)  # every list scanned
        assert recall(found, expected * 2 + 1) >= 0.98
        exact = np.einsum("qd,qkd->qk", queries, corpus[(found - 1) // 2])
        assert np.allclose(values, exact, atol=1e-5)  # the hits' scores are exact: re-scored with the floats
    # the breadth is the lists scanned: on vectors without clusters one list of 16 finds far less
    scattered = unit_rows(rng.normal(size=(3000, 16))).astype(np.float32)
    index = ann.new(16, params)
    ann.add(index, np.arange(3000, dtype=np.uint64), scattered)
    expected, _ = top_hits(queries, scattered, 5)
    wide, narrow = (recall(ann.search(index, queries, 5, breadth)[0], expected) for breadth in (16, 1))
    assert wide > 0.85 and narrow < wide - 0.3, (wide, narrow)


def test_the_kind_and_the_lists_follow_the_corpus():
    from bertkit.core.errors import BertkitError
    from bertkit.embeddings import ann

    auto = ann.Params()
    assert ann.resolve(auto, 384, ann.IVF_MIN - 1).kind == "hnsw"  # small corpora keep the graph
    big = ann.resolve(auto, 384, 200_000)
    assert (big.kind, big.lists, big.probes) == ("ivf", 2048, 512)  # the benchmark's measured setting
    assert ann.ivf_lists(50_000) == 1024 and ann.ivf_lists(1_000_000) == 4096
    assert ann.resolve(auto, 300, 200_000).kind == "hnsw"  # 4-bit codes of 4 dimensions need a multiple of 8
    assert ann.resolve(ann.Params(kind="hnsw"), 384, 200_000).kind == "hnsw"
    assert ann.default_breadth(ann.describe(big)) == 512
    assert ann.default_breadth(ann.describe(ann.resolve(auto, 384, 10))) == auto.ef_search
    for params, dimension, count, match in (
        (ann.Params(kind="ivf"), 300, 200_000, "multiple of 8"),
        (ann.Params(kind="ivf", lists=64), 384, 50, "needs at least 64 texts"),
        (ann.Params(kind="ivf"), 384, 10, "needs at least 16 texts"),
        (ann.Params(kind="flat"), 384, 10, "give one of auto, ivf, hnsw"),
        (ann.Params(kind="ivf", probes=5000), 384, 200_000, "can scan at most 2,048"),
        (ann.Params(kind="ivf", lists=64), None, 50, "needs at least 64 texts"),  # before the model loads
        # a setting of the other kind is refused, not dropped
        (ann.Params(probes=8), 384, 1000, "auto picks it for 1,000 texts; IVF from 50,000 texts"),
        (ann.Params(kind="hnsw", lists=64), 384, 200_000, "--lists and --probes set an IVF index"),
        (ann.Params(m=16, quantized=False), 384, 200_000, "--links, --no-quantize set a graph"),
        (ann.Params(kind="ivf", ef_search=200), 384, 1000, r"--ef-search set a graph \(HNSW\), and this index is IVF"),
    ):
        with pytest.raises(BertkitError, match=match):
            ann.resolve(params, dimension, count)


def test_ivf_index_through_the_cli(tmp_path, tiny_model, corpus_texts, cli, monkeypatch):
    corpus = write_lines(tmp_path / "docs.txt", corpus_texts)
    built = ("index", "build", "-m", tiny_model, "--corpus", corpus, "-o", tmp_path / "idx", "--kind", "ivf")
    code, _, err = cli(*built, "--lists", "4")
    assert code == 0 and "IVF-PQ4FS" in err, err
    stored = json.loads((tmp_path / "idx" / "index.json").read_text())["ann"]
    assert (stored["kind"], stored["lists"], stored["probes"]) == ("IVF-PQ4FS", 4, 1)
    # the build checks itself: this random model's vectors are crowded, and the note says what was found
    assert stored["check_recall"] < 0.95 and "the IVF index found" in " ".join(err.split()), stored
    code, out, err = cli("search", "--index", tmp_path / "idx", "-q", corpus_texts[3], "-k", "100")
    assert code == 0 and len(hits_of(out)[0]["hits"]) == 100, err  # 1 list scanned, yet k hits: the rest scanned
    asked = ("-q", corpus_texts[10], "-q", "great hotel and the song", "-k", "4")
    code, out, err = cli("search", "--index", tmp_path / "idx", "--probes", "4", *asked)
    assert code == 0, err
    code, exact_out, err = cli("search", "-m", tiny_model, "--corpus", corpus, "--no-cache", *asked)
    assert code == 0, err
    assert ranking(out) == ranking(exact_out)  # every list scanned, every kept code re-scored: exact
    code, _, err = cli("search", "--index", tmp_path / "idx", "--ef-search", "64", *asked)
    assert code == 2 and "is an IVF index" in err and "--probes" in err
    code, _, err = cli("search", "-m", tiny_model, "--corpus", corpus, "--probes", "2", *asked)
    assert code == 2 and "give it with --index" in err
    more = write_lines(tmp_path / "more.txt", ["a brand new text about zebras and tapirs"])
    code, _, err = cli("index", "add", "--index", tmp_path / "idx", "--corpus", more)
    assert code == 0, err
    code, out, err = cli("search", "--index", tmp_path / "idx", "--probes", "4", "-q", "a brand new text about zebras "
                         "and tapirs", "-k", "1")  # fmt: skip
    assert code == 0 and hits_of(out)[0]["hits"][0]["index"] == len(corpus_texts), out
    code, _, err = cli(*built, "--overwrite", "--lists", "500")
    assert code == 2 and "needs at least 500 texts" in err and "--kind hnsw" in err
    code, _, err = cli("index", "build", "-m", tiny_model, "--corpus", corpus, "-o", tmp_path / "g")
    assert code == 0 and "HNSW-SQ8" in err  # auto: a corpus this small keeps the graph
    from bertkit.embeddings import ann

    monkeypatch.setattr(ann, "IVF_MIN", 100)  # auto would make this corpus an IVF index...
    # ...that fails its check, so it builds the graph
    monkeypatch.setattr("bertkit.embeddings.index.CHECK_RECALL", 0.99)
    code, _, err = cli("index", "build", "-m", tiny_model, "--corpus", corpus, "-o", tmp_path / "a")
    assert code == 0 and "building an HNSW graph instead" in " ".join(err.split()), err
    assert json.loads((tmp_path / "a" / "index.json").read_text())["ann"]["kind"] == "HNSW-SQ8"
    code, _, err = cli("search", "--index", tmp_path / "g", "--probes", "2", *asked)
    assert code == 2 and "is a graph (HNSW)" in err and "--ef-search" in err


def test_missing_extra_names_the_install(monkeypatch, tmp_path, tiny_model, cli):
    monkeypatch.setitem(sys.modules, "faiss", None)  # import faiss fails as if not installed
    corpus = write_lines(tmp_path / "c.txt", ["the film"])
    code, _, err = cli("index", "build", "-m", tiny_model, "--corpus", corpus, "-o", tmp_path / "idx")
    assert code == 2 and "pip install -e '.[index]'" in err and "faiss-cpu" in err and not (tmp_path / "idx").exists()
    code, _, err = cli("search", "--index", tmp_path / "idx", "-q", "film")
    assert code == 2 and "pip install -e '.[index]'" in err and "faiss-cpu" in err


# ---------------------------------------------------------------- build, search, add


def test_index_search_matches_exact_search(tmp_path, tiny_model, corpus_texts, cli):
    lines = corpus_texts[:60] + [""] + corpus_texts[60:]  # a blank line keeps its place
    corpus = write_lines(tmp_path / "docs.txt", lines)
    queries = write_lines(tmp_path / "q.txt", [corpus_texts[3], "", "great hotel", corpus_texts[90]])
    code, _, err = cli("index", "build", "-m", tiny_model, "--corpus", corpus, "-o", tmp_path / "idx")
    assert code == 0, err and "indexed 120 texts (121 lines)" in " ".join(err.split())
    stored = json.loads((tmp_path / "idx" / "index.json").read_text())
    assert stored["model"] == str(tiny_model.resolve()) and stored["dimension"] == 64
    assert stored["settings"] == {"pooling": "mean", "normalize": False, "max_length": 128}
    assert (stored["count"], stored["lines"], stored["ann"]["library"]) == (120, 121, "faiss")
    assert stored["corpora"] == [{"path": str(corpus), "first": 0, "lines": 121, "texts": 120}]
    # the same hits JSONL as exact search, with no --model and no --corpus
    code, out, err = cli("search", "--index", tmp_path / "idx", "--queries", queries, "-k", "5")
    assert code == 0, err
    code, exact_out, err = cli(
        "search", "-m", tiny_model, "--corpus", corpus, "--queries", queries, "-k", "5", "--no-cache"
    )
    assert code == 0, err
    indexed, exact = hits_of(out), hits_of(exact_out)
    assert [r["query"] for r in indexed] == [r["query"] for r in exact] and indexed[1] == exact[1] == {
        "query": "",
        "hits": [],
        "empty": True,
    }
    for mine, theirs in zip(indexed, exact, strict=True):
        assert [(h["index"], h["text"]) for h in mine["hits"]] == [(h["index"], h["text"]) for h in theirs["hits"]]
        assert [h["score"] for h in mine["hits"]] == pytest.approx([h["score"] for h in theirs["hits"]], abs=1e-5)
        assert all(set(h) == {"index", "score", "text"} for h in mine["hits"])
    assert indexed[3]["hits"][0]["index"] == 91 and indexed[3]["hits"][0]["text"] == corpus_texts[90]
    # written atomically to a file, as exact search writes it
    code, _, err = cli(
        "search", "--index", tmp_path / "idx", "--queries", queries, "-k", "5", "-o", tmp_path / "h.jsonl"
    )
    assert code == 0 and hits_of((tmp_path / "h.jsonl").read_text()) == indexed


def test_stored_settings_encode_the_queries(tmp_path, tiny_model, corpus_texts, cli):
    corpus = write_lines(tmp_path / "docs.txt", corpus_texts)
    built = ("index", "build", "-m", tiny_model, "--corpus", corpus, "-o", tmp_path / "idx")
    code, _, err = cli(*built, "--pooling", "cls", "--max-length", "8", "--ef-search", "300")
    assert code == 0, err
    stored = json.loads((tmp_path / "idx" / "index.json").read_text())
    assert stored["settings"]["pooling"] == "cls" and stored["settings"]["max_length"] == 8
    assert stored["ann"]["ef_search"] == 300 and stored["ann"]["kind"] == "HNSW-SQ8"
    asked = ("-q", corpus_texts[10], "-q", "very awful meal and the phone", "-k", "4")
    code, out, err = cli("search", "--index", tmp_path / "idx", *asked)
    assert code == 0, err
    exact = ("search", "-m", tiny_model, "--corpus", corpus, "--no-cache", "--pooling", "cls", "--max-length", "8")
    code, exact_out, err = cli(*exact, *asked)
    assert code == 0, err
    assert ranking(out) == ranking(exact_out)


def test_unquantized_graph_and_a_breadth_per_search(tmp_path, tiny_model, corpus_texts, cli):
    corpus = write_lines(tmp_path / "docs.txt", corpus_texts)
    code, _, err = cli("index", "build", "-m", tiny_model, "--corpus", corpus, "-o", tmp_path / "idx", "--no-quantize")
    assert code == 0, err
    stored = json.loads((tmp_path / "idx" / "index.json").read_text())["ann"]
    assert (stored["kind"], stored["quantized"], stored["ef_search"], stored["m"]) == ("HNSW", False, 96, 48)
    asked = ("-q", corpus_texts[10], "-q", "great hotel and the song", "-k", "4")
    code, out, err = cli("search", "--index", tmp_path / "idx", "--ef-search", "4", *asked)
    assert code == 0, err
    code, exact_out, err = cli("search", "-m", tiny_model, "--corpus", corpus, "--no-cache", *asked)
    assert code == 0, err
    # a breadth below k is raised to k: no fewer hits than asked; an approximate search at so small a
    # breadth may miss a lower neighbour, but not a query's best one here (the first is its own text)
    found, exact = ranking(out), ranking(exact_out)
    assert [len(hits) for hits in found] == [len(hits) for hits in exact] == [4, 4]
    assert [hits[0] for hits in found] == [hits[0] for hits in exact]
    code, _, err = cli("search", "-m", tiny_model, "--corpus", corpus, "--ef-search", "64", *asked)
    assert code == 2 and "give it with --index" in err


def test_index_add_numbers_on_and_keeps_the_old_index_on_failure(tmp_path, tiny_model, corpus_texts, cli):
    first = write_lines(tmp_path / "a.txt", corpus_texts[:50])
    more = tmp_path / "b.jsonl"
    more.write_text("".join(json.dumps({"body": t}) + "\n" for t in ["", *corpus_texts[50:80]]), encoding="utf-8")
    code, _, err = cli("index", "build", "-m", tiny_model, "--corpus", first, "-o", tmp_path / "idx")
    assert code == 0, err
    before = {p: p.read_bytes() for p in (tmp_path / "idx").rglob("*") if p.is_file()}
    code, _, err = cli("index", "add", "--index", tmp_path / "idx", "--corpus", more)  # no 'text' field
    assert code == 2 and "--text-column" in err
    blank = write_lines(tmp_path / "blank.txt", ["", " "])
    code, _, err = cli("index", "add", "--index", tmp_path / "idx", "--corpus", blank)
    assert code == 2 and "has no text" in err
    assert {p: p.read_bytes() for p in (tmp_path / "idx").rglob("*") if p.is_file()} == before
    code, _, err = cli("index", "add", "--index", tmp_path / "idx", "--corpus", more, "--text-column", "body")
    assert code == 0, err and "added 30 texts (lines 50 to 80)" in " ".join(err.split())
    stored = json.loads((tmp_path / "idx" / "index.json").read_text())
    assert (stored["count"], stored["lines"]) == (80, 81)
    assert [(c["first"], c["lines"]) for c in stored["corpora"]] == [(0, 50), (50, 31)]
    code, out, err = cli(
        "search", "--index", tmp_path / "idx", "-q", corpus_texts[70], "-q", corpus_texts[5], "-k", "3"
    )
    assert code == 0, err
    found = hits_of(out)
    assert (found[0]["hits"][0]["index"], found[0]["hits"][0]["text"]) == (71, corpus_texts[70])  # 50 + blank + 20
    assert (found[1]["hits"][0]["index"], found[1]["hits"][0]["text"]) == (5, corpus_texts[5])
    assert not [p.name for p in tmp_path.iterdir() if p.name.startswith(".")]  # no staging or lock left


# ---------------------------------------------------------------- errors


def test_errors_a_user_can_make(tmp_path, tiny_model, corpus_texts, cli):
    corpus = write_lines(tmp_path / "docs.txt", corpus_texts[:20])
    idx = tmp_path / "idx"
    code, _, err = cli("search", "--index", tmp_path / "nowhere", "-q", "film")
    assert code == 2 and "does not exist" in err
    code, _, err = cli("search", "--index", tmp_path, "-q", "film")
    assert code == 2 and "not an index made by `bertkit index build`" in err
    code, _, err = cli("index", "add", "--index", tmp_path / "nowhere", "--corpus", corpus)
    assert code == 2 and "does not exist" in err
    code, _, err = cli("search", "-q", "film")
    assert code == 2 and "--index" in err
    assert cli("index", "build", "-m", tiny_model, "--corpus", corpus, "-o", idx)[0] == 0
    code, _, err = cli("search", "--index", idx, "-m", tiny_model, "--corpus", corpus, "-q", "film")
    assert code == 2 and "drop --model, --corpus" in err
    code, _, err = cli("index", "build", "-m", tiny_model, "--corpus", corpus, "-o", idx)
    assert code == 2 and "--overwrite" in err
    assert cli("index", "build", "-m", tiny_model, "--corpus", corpus, "-o", idx, "--overwrite")[0] == 0
    (tmp_path / "mine").mkdir()
    write_lines(tmp_path / "mine" / "notes.txt", ["mine"])
    code, _, err = cli("index", "build", "-m", tiny_model, "--corpus", corpus, "-o", tmp_path / "mine", "--overwrite")
    assert code == 2 and "not written by bertkit" in err and (tmp_path / "mine" / "notes.txt").is_file()
    # a script that edits a field of idx/index.json (the index's description, naming its generation)
    stored = json.loads((idx / "index.json").read_text())
    assert stored["generation"] == "gen-000002" and (idx / "gen-000002" / "texts.jsonl").is_file()
    edits = [
        ("settings", {**stored["settings"], "max_length": "128"}, "'settings.max_length' is"),
        ("count", "20", "'count' is \"20\""),
        # a length the model cannot read is index.json's, not an option the user did not give
        ("settings", {**stored["settings"], "max_length": 100_000}, "index.json's 'settings.max_length' is 100000"),
        ("settings", {**stored["settings"], "max_length": 10**12}, "'settings.max_length' is 1000000000000, above"),
        ("generation", "../idx", "'generation' is"),
    ]
    for key, wrong, said in edits:
        (idx / "index.json").write_text(json.dumps({**stored, key: wrong}))
        code, _, err = cli("search", "--index", idx, "-q", "film")
        flat = " ".join(err.split())
        assert code == 2 and said in flat and "index.json" in flat and "rebuild the index" in flat, err
        assert "--max-length" not in flat, err
    (idx / "index.json").write_text(json.dumps(stored))
    current_file(idx, "vectors.faiss").unlink()
    code, _, err = cli("search", "--index", idx, "-q", "film")
    assert code == 2 and "lacks gen-000002/vectors.faiss" in err and "rebuild the index" in err
    (idx / "index.json").write_text("{not json")
    code, _, err = cli("search", "--index", idx, "-q", "film")
    assert code == 2 and "index.json: is not JSON" in err and "rebuild the index" in err


def test_a_changed_model_is_refused(tmp_path, model_copy, corpus_texts, cli):
    import os

    from transformers import BertConfig, BertModel

    corpus = write_lines(tmp_path / "docs.txt", corpus_texts[:20])
    idx = tmp_path / "idx"
    assert cli("index", "build", "-m", model_copy, "--corpus", corpus, "-o", idx)[0] == 0
    weights = model_copy / "model.safetensors"
    os.utime(weights, ns=(weights.stat().st_atime_ns, weights.stat().st_mtime_ns + 10**9))  # retrained in place
    code, _, err = cli("search", "--index", idx, "-q", "film")
    assert code == 2 and "changed since the index was built (its weight files)" in " ".join(err.split())
    config = BertConfig.from_pretrained(model_copy)
    config.hidden_size, config.intermediate_size = 32, 64
    BertModel(config).save_pretrained(model_copy)  # another width at the same path
    for args in (("search", "--index", idx, "-q", "film"), ("index", "add", "--index", idx, "--corpus", corpus)):
        code, _, err = cli(*args)
        assert code == 2 and "vectors of 32 dimensions, the index holds 64" in " ".join(err.split())


def test_a_model_given_by_relative_path_is_found_again_from_anywhere(
    tmp_path, model_copy, corpus_texts, cli, monkeypatch
):
    corpus = write_lines(tmp_path / "docs.txt", corpus_texts[:30])
    monkeypatch.chdir(tmp_path)
    code, _, err = cli("index", "build", "-m", "model", "--corpus", "docs.txt", "-o", "idx")
    assert code == 0, err
    stored = json.loads((tmp_path / "idx" / "index.json").read_text())
    assert stored["model"] == str(model_copy) and stored["identity"].startswith(str(model_copy) + "|")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)  # the search must not read "model" against this folder
    code, out, err = cli("search", "--index", tmp_path / "idx", "-q", corpus_texts[4], "-k", "1")
    assert code == 0, err
    assert hits_of(out)[0]["hits"][0]["index"] == 4
    # an index written by an older bertkit stored the path as given: the weights decide, not the spelling
    stored["identity"] = "model|" + stored["identity"].split("|", 1)[1]
    (tmp_path / "idx" / "index.json").write_text(json.dumps(stored))
    code, _, err = cli("search", "--index", tmp_path / "idx", "-q", corpus_texts[4], "-k", "1")
    assert code == 0, err
    assert corpus.exists()

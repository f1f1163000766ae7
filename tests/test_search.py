"""`bertkit search` (bertkit/embeddings/search.py): its cache of the corpus's vectors."""

import json

import pytest


@pytest.fixture
def corpus(tmp_path):
    source = tmp_path / "corpus.txt"
    source.write_text("a great film\n\nan awful meal\na lovely trip\n")
    return source


def _search(cli, model, corpus, cache):
    code, out, err = cli("search", "-m", model, "--corpus", corpus, "-q", "great film", "--cache-dir", cache, "-k", "2")
    assert code == 0, err
    return json.loads(out), " ".join(err.split())


@pytest.mark.parametrize(
    "damage",
    [
        pytest.param(lambda p: p.write_bytes(b"garbage, not numpy"), id="garbage"),
        pytest.param(lambda p: p.write_bytes(p.read_bytes()[: len(p.read_bytes()) // 2]), id="truncated"),
        pytest.param(lambda p: p.write_bytes(b""), id="empty"),
        pytest.param(lambda p: np_save(p, [[0.5] * 3] * 4), id="narrow"),
        pytest.param(lambda p: np_save(p, [[0.5] * 64] * 7), id="rows"),
        pytest.param(lambda p: np_save(p, [0.5] * 4), id="flat"),
        pytest.param(lambda p: np_save(p, [[float("nan")] * 64] * 4), id="nan"),
        pytest.param(lambda p: np_save(p, [{"a": 1}] * 4), id="objects"),
    ],
)
def test_a_broken_search_cache_is_rebuilt(cli, tmp_path, tiny_model, corpus, damage):
    cache = tmp_path / "cache"
    first, _ = _search(cli, tiny_model, corpus, cache)
    (cached,) = cache.glob("*.npy")
    damage(cached)
    again, err = _search(cli, tiny_model, corpus, cache)
    assert again == first
    assert f"corpus embeddings in {cached} are damaged" in err and "embedding the corpus again" in err, err
    import numpy as np

    assert np.load(cached).shape == (4, 64)
    _, err = _search(cli, tiny_model, corpus, cache)
    assert "reused" in err and "are damaged" not in err


def np_save(path, rows):
    import numpy as np

    with open(path, "wb") as handle:
        np.save(handle, np.array(rows), allow_pickle=True)


def test_an_unwritable_search_cache_is_a_warning(cli, tmp_path, tiny_model, corpus):
    blocked = tmp_path / "a-file"
    blocked.write_text("not a folder")
    for cache in (blocked, blocked / "sub"):
        hits, err = _search(cli, tiny_model, corpus, cache)
        assert hits["hits"][0]["text"] == "a great film" or len(hits["hits"]) == 2
        assert "cannot keep the corpus embeddings" in err and "without the cache" in err, err
    assert blocked.read_text() == "not a folder"

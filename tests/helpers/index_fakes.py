"""A model-free encoder for index tests that build and read hundreds of indexes: each text's vector
is a fixed function of the text, so a reader can check that a hit's text is the one its vector came
from. Used in-process and by the reader and writer processes of tests/test_index_publishing.py."""

from __future__ import annotations

import zlib
from pathlib import Path

import numpy as np

DIMENSION = 16


def vector(text: str) -> np.ndarray:
    rng = np.random.default_rng(zlib.crc32(text.encode("utf-8")))
    row = rng.normal(size=DIMENSION)
    return (row / np.linalg.norm(row)).astype(np.float32)


class FakeEncoder:
    dimension = DIMENSION

    def __init__(self):
        from bertkit.tasks.embed.encoder import Settings

        self.settings = Settings(pooling="mean", normalize=True, max_length=32)

    def encode(self, texts, batch_size: int = 32) -> np.ndarray:
        return np.stack([vector(t) for t in texts])

    def identity(self) -> str:
        return "fake|mean|True|32"

    def report_truncation(self) -> None:
        pass


def use_fake_encoder() -> None:
    """Searches and `index add` encode with the fake encoder, whatever model the index names (in
    a process of its own: tests patch it with `monkeypatch`)."""
    from bertkit.embeddings import index

    index.index_encoder = lambda *args, **kwargs: FakeEncoder()


def corpus(folder: Path, tag: str, lines: int, first: int = 0) -> Path:
    """A corpus whose every text carries `tag` (the generation that wrote it) and its line, with
    a blank line every seventh."""
    path = folder / f"{tag}-{first}.txt"
    texts = ["" if (first + i) % 7 == 3 else f"{tag} line {first + i}" for i in range(lines)]
    path.write_text("\n".join(texts) + "\n", encoding="utf-8")
    return path


def build(folder: Path, tag: str, lines: int, overwrite: bool = True) -> dict:
    from bertkit.embeddings import ann
    from bertkit.embeddings.index import build_index

    source = corpus(folder.parent, tag, lines)
    return build_index(FakeEncoder, "fake-model", str(source), str(folder), "text", 32, overwrite, ann.Params())


def add(folder: Path, tag: str, lines: int) -> dict:
    """Add `lines` lines to the index, numbered on from its last."""
    from bertkit.embeddings.index import add_to_index, read_index

    first = read_index(str(folder))["lines"]
    return add_to_index(str(folder), str(corpus(folder.parent, tag, lines, first)), "text", 32, None, False, None)


def check_search(folder: Path, probe: str = "a probe") -> tuple[str, int]:
    """Search the index for every hit and check that it is one generation, whole: every hit's text
    carries the same tag, its score is the score of that text's own vector, and every non-blank
    line is found. Returns (the tag, the texts found); raises AssertionError otherwise."""
    from bertkit.embeddings.index import search_index

    (record,) = search_index(str(folder), [probe], 10_000, 32, None, False, None, breadth=10_000)
    hits = record["hits"]
    tags = {h["text"].split(" line ")[0] for h in hits}
    assert len(tags) == 1, f"hits from several generations: {sorted(tags)}"
    for hit in hits:
        assert hit["text"] == f"{next(iter(tags))} line {hit['index']}", f"hit {hit} is not its line"
        expected = float(vector(probe) @ vector(hit["text"]))
        assert abs(hit["score"] - expected) < 1e-4, f"hit {hit}: its vector is not its text's ({expected})"
    lines = max(h["index"] for h in hits) + 1
    filled = [i for i in range(lines) if i % 7 != 3]
    assert sorted(h["index"] for h in hits) == filled, "not every text of the generation was found"
    return next(iter(tags)), len(hits)

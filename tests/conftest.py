import os
import random
import sys
from pathlib import Path

import pytest

os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["HF_DATASETS_OFFLINE"] = "1"
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared" / "data"
sys.path.insert(0, str(Path(__file__).parent))

from tiny import build_tiny_bert, ner_sentence, sentence, write_conll, write_easy_csv, write_spans  # noqa: E402


@pytest.fixture(scope="session")
def tiny_model(tmp_path_factory) -> Path:
    rng = random.Random(0)
    texts = [sentence(rng, label) for label in ["positive", "negative"] * 200]
    texts += [" ".join(ner_sentence(rng)[0]) for _ in range(200)]
    reviews = (ROOT / "examples" / "reviews" / "train.csv").read_text(encoding="utf-8").splitlines()
    return build_tiny_bert(tmp_path_factory.mktemp("tiny") / "bert", texts + reviews)


@pytest.fixture(scope="session")
def easy_data(tmp_path_factory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("easy")
    return {
        "train": write_easy_csv(folder / "train.csv", 240, seed=1),
        "test": write_easy_csv(folder / "test.csv", 80, seed=2),
    }


@pytest.fixture
def cli(capsys):
    """Run `bertkit ARGS` in-process; returns (exit code, stdout, stderr)."""
    from bertkit.cli import main

    def run(*args: str) -> tuple[int, str, str]:
        code = 0
        try:
            main([str(a) for a in args])
        except SystemExit as stop:
            code = stop.code if isinstance(stop.code, int) else (0 if stop.code is None else 1)
        out, err = capsys.readouterr()
        return code, out, err

    return run


@pytest.fixture(scope="session")
def ner_data(tmp_path_factory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("ner")
    return {
        "train": write_conll(folder / "train.conll", 300, seed=1, long_every=25),
        "test": write_conll(folder / "test.conll", 80, seed=2, long_every=10),
        "spans": write_spans(folder / "spans.jsonl", 300, seed=3),
    }


def shared(*parts: str) -> Path:
    path = SHARED.joinpath(*parts)
    if not path.exists():
        pytest.skip(f"{path} is not available (../shared/data is absent)")
    return path

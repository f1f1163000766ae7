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

# ---------------------------------------------------------------- the `slow` marker is kept honest
# Every test that trains a model (itself or through a fixture it is the first to use) must carry
# `@pytest.mark.slow`, so that `make test-fast` (`-m "not slow"`) trains nothing. A test that
# trains without it fails, naming itself.

_running: dict = {}


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item):
    _running["item"] = item


def pytest_runtest_teardown(item):
    _running.pop("item", None)


@pytest.fixture(autouse=True, scope="session")
def _training_needs_the_slow_marker():
    from transformers import Trainer

    real = Trainer.train

    def guarded(self, *args, **kwargs):
        item = _running.get("item")
        if item is not None and item.get_closest_marker("slow") is None:
            raise AssertionError(f"{item.nodeid} trains a model: mark it @pytest.mark.slow")
        return real(self, *args, **kwargs)

    Trainer.train = guarded
    yield
    Trainer.train = real


@pytest.fixture(autouse=True, scope="session")
def _feature_cache_in_a_temporary_folder(tmp_path_factory):
    """Runs cache their tokenized features (data.cache, on by default): in a folder of the test
    session's own, never the user's ~/.cache/bertkit."""
    kept = os.environ.get("BERTKIT_CACHE")
    os.environ["BERTKIT_CACHE"] = str(tmp_path_factory.mktemp("bertkit-cache"))
    yield
    if kept is None:
        os.environ.pop("BERTKIT_CACHE", None)
    else:
        os.environ["BERTKIT_CACHE"] = kept


@pytest.fixture(scope="session")
def tiny_model(tmp_path_factory) -> Path:
    rng = random.Random(0)
    texts = [sentence(rng, label) for label in ["positive", "negative"] * 200]
    texts += [" ".join(ner_sentence(rng)[0]) for _ in range(200)]
    # the first 400 reviews, as "text,label" lines: enough of their words for the tests that read
    # reviews, few enough that the 400-piece vocabulary still holds the synthetic sentences' words
    lines = (ROOT / "examples" / "reviews" / "train.csv").read_text(encoding="utf-8").splitlines()[:401]
    reviews = [line.rsplit(",", 1)[0] for line in lines]
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


@pytest.fixture(scope="session")
def classify_bundle(tmp_path_factory, tiny_model, easy_data) -> Path:
    """A classify bundle trained for real (one short epoch) through the CLI, for tests of what
    happens around a model rather than of how well it learns."""
    from bertkit.cli import main

    folder = tmp_path_factory.mktemp("classify-bundle")
    config = folder / "run.yaml"
    config.write_text(
        f"task: classify\nmodel:\n  name: {tiny_model}\n  max_length: 32\n"
        f"data:\n  train: {easy_data['train']}\ntrain:\n  epochs: 1\n  learning_rate: 3.0e-3\n"
        f"output_dir: {folder / 'model'}\n"
    )
    try:
        main(["train", "classify", "-c", str(config)])
    except SystemExit as stop:
        assert stop.code in (0, None)
    return folder / "model"


@pytest.fixture(scope="session")
def head_models(tmp_path_factory, tiny_model) -> dict[str, Path]:
    """Plain Hugging Face directories (no bertkit.json) with untrained task heads on the tiny
    BERT: token classification, question answering and masked LM."""
    import torch
    from transformers import (
        AutoModelForMaskedLM,
        AutoModelForQuestionAnswering,
        AutoModelForTokenClassification,
        AutoTokenizer,
    )

    from bertkit.core.models import quiet_transformers

    quiet_transformers()
    tokenizer = AutoTokenizer.from_pretrained(tiny_model)
    labels = ["O", "B-LOC", "I-LOC", "B-PER", "I-PER"]
    built = {}
    for name, loader, extra in (
        ("ner", AutoModelForTokenClassification, {"id2label": dict(enumerate(labels)), "num_labels": 5}),
        ("qa", AutoModelForQuestionAnswering, {}),
        ("mlm", AutoModelForMaskedLM, {}),
    ):
        torch.manual_seed(0)
        folder = tmp_path_factory.mktemp(f"head-{name}")
        loader.from_pretrained(tiny_model, **extra).save_pretrained(folder)
        tokenizer.save_pretrained(folder)
        built[name] = folder
    return built

import json
import os
import random
import sys
from pathlib import Path

import pytest

os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["HF_DATASETS_OFFLINE"] = "1"
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
# One thread for torch here and in every process a test starts (before torch is imported): the
# tiny models gain nothing from a second one, and under pytest-xdist (a worker a core) or on a
# busy machine its spinning made a 6-epoch training of the tiny BERT 33 s instead of 5 s.
os.environ.setdefault("OMP_NUM_THREADS", "1")
# torch 2.5's inductor starts a pool of compile workers when it is imported (transformers 5.0's
# ModernBERT imports it): one compile thread, no pool, no processes a test did not start itself
os.environ.setdefault("TORCHINDUCTOR_COMPILE_THREADS", "1")
# Messages are printed 200 columns wide (rich reads COLUMNS when output is not a terminal, as
# under pytest's capture; else 80): a test that finds a path in a message must not find it cut
# in two by a line break, wherever the session's temporary folder is (pytest-xdist's are longer).
os.environ["COLUMNS"] = "200"

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared" / "data"
sys.path.insert(0, str(Path(__file__).parent))  # tests/: `from helpers.tiny import ...`

from helpers.fixture_cache import OUTPUT, built  # noqa: E402
from helpers.in_process import run_main  # noqa: E402
from helpers.tiny import (  # noqa: E402
    build_tiny_bert,
    ner_sentence,
    sentence,
    write_conll,
    write_easy_csv,
    write_spans,
    write_squad,
)

# ---------------------------------------------------------------- the `slow` marker is kept honest
# Every test that trains a model must carry `@pytest.mark.slow`, so that `make test-fast`
# (`-m "not slow"`) trains nothing. A test that uses a fixture that trains (TRAINING_FIXTURES,
# directly or through another fixture) gets the marker here, whether or not it is the first to use
# it; a test that trains without the marker fails, naming itself.

TRAINING_FIXTURES = {"trained_bundle"}  # the fixtures that train call it


@pytest.hookimpl(tryfirst=True)  # before -m deselects
def pytest_collection_modifyitems(config, items):
    for item in items:
        if TRAINING_FIXTURES & set(getattr(item, "fixturenames", ())) and item.get_closest_marker("slow") is None:
            item.add_marker(pytest.mark.slow)


_running: dict = {}


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item):
    _running["item"] = item


def pytest_runtest_teardown(item):
    _running.pop("item", None)


# ---------------------------------------------------------------- and so is `spawns`
# A test that starts a Python process (bertkit, torchrun, accelerate, a script, a pytest session)
# carries `@pytest.mark.spawns` or `slow`: each start imports torch again (seconds), so
# `make test-fast` (`-m "not slow and not spawns"`) leaves them to `make test`. A test that starts
# one without either marker fails, naming itself.

_PYTHONS = (sys.executable, str(Path(sys.executable).parent), "python", "bertkit", "torchrun", "accelerate")


@pytest.fixture(autouse=True, scope="session")
def _processes_need_the_spawns_marker():
    import subprocess

    real = subprocess.Popen.__init__

    def guarded(self, args, *rest, **kwargs):
        item = _running.get("item")
        if item is not None and not (item.get_closest_marker("slow") or item.get_closest_marker("spawns")):
            command = args if isinstance(args, str) else " ".join(map(str, args))
            if any(name in command for name in _PYTHONS):
                raise AssertionError(f"{item.nodeid} starts a Python process: mark it @pytest.mark.spawns")
        return real(self, args, *rest, **kwargs)

    subprocess.Popen.__init__ = guarded
    yield
    subprocess.Popen.__init__ = real


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
def tiny_model() -> Path:
    """The tiny BERT most tests run (tests/helpers/tiny.py), from the fixture cache."""
    reviews = ROOT / "examples" / "reviews" / "train.csv"

    def build(folder: Path) -> None:
        rng = random.Random(0)
        texts = [sentence(rng, label) for label in ["positive", "negative"] * 200]
        texts += [" ".join(ner_sentence(rng)[0]) for _ in range(200)]
        # the first 400 reviews, as "text,label" lines: enough of their words for the tests that read
        # reviews, few enough that the 400-piece vocabulary still holds the synthetic sentences' words
        lines = reviews.read_text(encoding="utf-8").splitlines()[:401]
        build_tiny_bert(folder / "bert", texts + [line.rsplit(",", 1)[0] for line in lines])

    return built("tiny-bert", "400 synthetic sentences, 200 NER sentences, 400 reviews", build, [reviews]) / "bert"


@pytest.fixture(scope="session")
def easy_data() -> dict[str, Path]:
    def build(folder: Path) -> None:
        write_easy_csv(folder / "train.csv", 240, seed=1)
        write_easy_csv(folder / "test.csv", 80, seed=2)

    folder = built("easy-data", "train 240 seed 1, test 80 seed 2", build)
    return {"train": folder / "train.csv", "test": folder / "test.csv"}


@pytest.fixture
def cli(capsys):
    """Run `bertkit ARGS` in-process; returns (exit code, stdout, stderr)."""

    def run(*args: str) -> tuple[int, str, str]:
        code = run_main(*args)
        out, err = capsys.readouterr()
        return code, out, err

    return run


@pytest.fixture(scope="session")
def ner_data() -> dict[str, Path]:
    def build(folder: Path) -> None:
        write_conll(folder / "train.conll", 300, seed=1, long_every=25)
        write_conll(folder / "test.conll", 80, seed=2, long_every=10)
        write_spans(folder / "spans.jsonl", 300, seed=3)

    folder = built("ner-data", "train 300 seed 1 long 25, test 80 seed 2 long 10, spans 300 seed 3", build)
    return {"train": folder / "train.conll", "test": folder / "test.conll", "spans": folder / "spans.jsonl"}


def shared(*parts: str) -> Path:
    path = SHARED.joinpath(*parts)
    if not path.exists():
        pytest.skip(f"{path} is not available (../shared/data is absent)")
    return path


# ---------------------------------------------------------------- trained bundles, built once
@pytest.fixture(scope="session")
def trained_bundle():
    """`trained_bundle(name, task, config)`: the bundle `bertkit train TASK` writes from `config`
    (YAML whose output_dir is OUTPUT), trained once for the whole session, every xdist worker and
    the sessions after it while the code and the config are the same (tests/helpers/fixture_cache.py).
    What is tested against it must not write into it: it is shared."""

    def get(name: str, task: str, config: str) -> Path:
        assert f"output_dir: {OUTPUT}" in config, "a recipe's output_dir is OUTPUT"

        def build(folder: Path) -> None:
            path = folder / "run.yaml"
            path.write_text(config.replace(OUTPUT, str(folder / "model")), encoding="utf-8")
            assert run_main("train", task, "-c", path) == 0, f"training the {name} bundle failed"

        return built(name, f"{task}\n{config}", build) / "model"

    return get


@pytest.fixture(scope="session")
def classify_bundle(trained_bundle, tiny_model, easy_data) -> Path:
    """A classify bundle trained for real (one short epoch) through the CLI, for tests of what
    happens around a model rather than of how well it learns."""
    return trained_bundle(
        "classify-bundle",
        "classify",
        f"task: classify\nmodel:\n  name: {tiny_model}\n  max_length: 32\n"
        f"data:\n  train: {easy_data['train']}\ntrain:\n  epochs: 1\n  learning_rate: 3.0e-3\n"
        f"output_dir: {OUTPUT}\n",
    )


@pytest.fixture(scope="session")
def learned_classify_bundle(trained_bundle, tiny_model, easy_data) -> Path:
    """A classify bundle that learnt the easy task (6 epochs, scored on its test split): for tests
    of what training writes and of what a good model does (classify end to end, distill's teacher)."""
    return trained_bundle(
        "learned-classify",
        "classify",
        f"task: classify\nmodel:\n  name: {tiny_model}\n  max_length: 32\n"
        f"data:\n  train: {easy_data['train']}\n  test: {easy_data['test']}\n"
        "train:\n  epochs: 6\n  batch_size: 16\n  learning_rate: 3.0e-3\n  warmup_ratio: 0.0\n"
        f"  logging_steps: 5\n  seed: 7\noutput_dir: {OUTPUT}\n",
    )


def write_multi_label(path: Path, n: int, seed: int) -> None:
    """JSON lines of easy multi-label texts: "praise" when "great" is in it, "blame" for "awful"."""
    rng = random.Random(seed)
    with path.open("w") as out:
        for _ in range(n):
            words = rng.sample(["great", "awful", "film", "meal", "the", "was"], 4)
            tags = [t for t, w in (("praise", "great"), ("blame", "awful")) if w in words]
            out.write(json.dumps({"text": " ".join(words), "label": tags}) + "\n")


@pytest.fixture(scope="session")
def multi_label_data() -> Path:
    def build(folder: Path) -> None:
        write_multi_label(folder / "multi.jsonl", 300, 3)

    return built("multi-label-data", "300 seed 3", build) / "multi.jsonl"


@pytest.fixture(scope="session")
def multi_label_bundle(trained_bundle, tiny_model, multi_label_data) -> Path:
    """A multi-label classify bundle (2 epochs on 300 texts; 30 validation: calibrated per label)."""
    return trained_bundle(
        "multi-label",
        "classify",
        f"task: classify\nmodel:\n  name: {tiny_model}\n  max_length: 16\ndata:\n  train: {multi_label_data}\n"
        f"train:\n  epochs: 2\n  learning_rate: 3.0e-3\noutput_dir: {OUTPUT}\n",
    )


class _Bundles(dict):
    """Trained bundles by task, each trained when first asked for."""

    def __init__(self, make):
        super().__init__()
        self._make = make

    def __missing__(self, task: str) -> Path:
        self[task] = self._make(task)
        return self[task]


@pytest.fixture(scope="session")
def bundles(trained_bundle, tiny_model, classify_bundle, ner_data) -> dict[str, Path]:
    """One small trained bundle of each task (a short epoch each), for tests of what is done with a
    bundle (export, batching, serving) rather than of how well it learns; `bundles[task]` trains it
    when first asked for."""
    model = f"model:\n  name: {tiny_model}\n  max_length: 32\n"
    train = "train:\n  epochs: 1\n  batch_size: 16\n  learning_rate: 3.0e-3\n"

    def data(name: str) -> Path:
        return built("bundle-data", "squad 120 seed 1 long 6, dev 20 seed 2 long 4; pairs 120 seed 1, 40 seed 2; "
                     "corpus 120 seed 3", _bundle_data) / name

    bodies = {
        "ner": f"{model}data:\n  train: {ner_data['train']}\n  test: {ner_data['test']}\n{train}",
        "qa": f"model:\n  name: {tiny_model}\n  max_length: 64\ndata:\n  train: {data('train.json')}\n"
        f"  validation: {data('dev.json')}\nqa:\n  doc_stride: 16\n  max_question_length: 16\n{train}",
        "embed": f"{model}data:\n  train: {data('pairs.jsonl')}\n  validation: {data('dev.jsonl')}\n"
        f"  text_column: query\n  text_pair_column: passage\n{train}",
        "mlm-adapt": f"{model}data:\n  train: {data('corpus.txt')}\n{train}",
    }

    def make(task: str) -> Path:
        if task == "classify":
            return classify_bundle
        return trained_bundle(f"{task}-bundle", task, f"task: {task}\n{bodies[task]}output_dir: {OUTPUT}\n")

    return _Bundles(make)


PAIR_KEYS = ["alpha", "bravo", "kilo", "lima", "delta", "echo", "golf", "hotel"]


def _pairs(path: Path, n: int, seed: int) -> None:

    rng = random.Random(seed)
    rows = []
    for _ in range(n):
        a, b = rng.sample(PAIR_KEYS, 2)
        rows.append({"query": f"about {a} {b}", "passage": " ".join([a, b, *rng.choices(["the", "film", "was"], k=4)])})
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))


def _bundle_data(folder: Path) -> None:
    write_squad(folder / "train.json", 120, seed=1, long_every=6)
    write_squad(folder / "dev.json", 20, seed=2, long_every=4)
    _pairs(folder / "pairs.jsonl", 120, 1)
    _pairs(folder / "dev.jsonl", 40, 2)
    rng = random.Random(3)
    (folder / "corpus.txt").write_text("\n".join(sentence(rng, lab) for lab in ["positive", "negative"] * 60) + "\n")


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


@pytest.fixture(scope="session")
def classify_model(tmp_path_factory, tiny_model) -> Path:
    """A plain Hugging Face classification directory (untrained head) on the tiny BERT."""
    import torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    from bertkit.core.models import quiet_transformers

    quiet_transformers()
    torch.manual_seed(0)
    labels = {0: "negative", 1: "positive", 2: "neutral"}
    model = AutoModelForSequenceClassification.from_pretrained(tiny_model, id2label=labels, num_labels=3)
    target = tmp_path_factory.mktemp("serve") / "<classify>"
    model.save_pretrained(target)
    AutoTokenizer.from_pretrained(tiny_model).save_pretrained(target)
    return target

"""The on-disk feature cache (bertkit/training/feature_cache.py): a second run with the same inputs
skips tokenizing and gets the same features; a changed setting, data file or tokenizer rebuilds;
data.cache: false turns it off; an incomplete or unwritable cache never breaks a run. Every task
that builds its features through `Training.prepare` goes through it."""

import random

import pytest
from helpers.tiny import sentence, write_conll, write_squad


@pytest.fixture
def cache(tmp_path, monkeypatch):
    folder = tmp_path / "cache"
    monkeypatch.setenv("BERTKIT_CACHE", str(folder))
    return folder / "features"


@pytest.fixture
def counted(monkeypatch):
    """How often a task's `prepare` and the tokenizer's __call__ ran."""
    from transformers import PreTrainedTokenizerBase

    from bertkit.tasks import get_task

    calls = {"prepare": 0, "tokenizer": 0}
    real_call = PreTrainedTokenizerBase.__call__

    def tokenizer_call(self, *args, **kwargs):
        calls["tokenizer"] += 1
        return real_call(self, *args, **kwargs)

    monkeypatch.setattr(PreTrainedTokenizerBase, "__call__", tokenizer_call)
    for name in ("classify", "ner", "qa", "mlm-adapt"):
        part = get_task(name).training
        real = part.prepare

        def prepare(ds, tokenizer, info, real=real):
            calls["prepare"] += 1
            return real(ds, tokenizer, info)

        monkeypatch.setattr(part, "prepare", prepare)
    return calls


def features_of(task_name: str, sets: dict, tokenizer=None, calls=None):
    """The training features as `bertkit train` builds them (through the cache unless data.cache
    is off), and the lines it printed; `calls["tokenizing"]`: tokenizer calls while building them."""
    from bertkit.config import load_config
    from bertkit.core.progress import console
    from bertkit.core.run_info import RunInfo
    from bertkit.core.tokenization import load_tokenizer
    from bertkit.tasks import get_task
    from bertkit.training.run import _features

    cfg = load_config(None, task=task_name, **sets)
    task = get_task(task_name)
    raw = task.training.load(cfg)
    info = RunInfo(task.training.setup(raw, cfg))
    tokenizer = tokenizer or load_tokenizer(cfg.model.name, None, False)
    info = info.replace(**task.training.tokenizer_facts(tokenizer, info))
    calls = calls if calls is not None else {}
    started = calls.get("tokenizer", 0)
    with console.capture() as captured:
        features = _features(cfg, task, raw, tokenizer, info)
    calls["tokenizing"] = calls.get("tokenizer", 0) - started
    return features, captured.get()


def classify_sets(tiny_model, train, **more) -> dict:
    return {"model.name": str(tiny_model), "model.max_length": 32, "data.train": str(train), **more}


def entries(cache) -> list:
    return sorted(p.name for p in cache.iterdir() if not p.name.startswith(".")) if cache.exists() else []


def test_second_run_reads_the_cache_and_skips_tokenizing(tiny_model, easy_data, cache, counted):
    sets = classify_sets(tiny_model, easy_data["train"])
    first, said = features_of("classify", sets, calls=counted)
    assert counted["prepare"] == 1 and counted["tokenizing"] > 0
    assert "cached in" in said and len(entries(cache)) == 1
    second, said = features_of("classify", sets, calls=counted)
    assert counted["prepare"] == 1 and counted["tokenizing"] == 0  # neither prepare nor the tokenizer ran
    assert "read from the cache" in said and "tokenizing skipped" in said
    for role in ("train", "validation"):
        assert second[role].to_dict() == first[role].to_dict()
        assert second[role].cache_files  # memory-mapped Arrow files, not rows in RAM


def test_a_changed_setting_rebuilds(tiny_model, easy_data, cache, counted):
    sets = classify_sets(tiny_model, easy_data["train"])
    features_of("classify", sets)
    shorter, said = features_of("classify", {**sets, "model.max_length": 16})
    assert counted["prepare"] == 2 and "cached in" in said and len(entries(cache)) == 2
    assert max(len(ids) for ids in shorter["train"]["input_ids"]) <= 16
    features_of("classify", {**sets, "train.seed": 7})  # another validation split: other raw data
    assert counted["prepare"] == 3 and len(entries(cache)) == 3
    features_of("classify", {**sets, "model.max_length": 16})  # back to a setting seen before
    assert counted["prepare"] == 3


def test_a_changed_data_file_rebuilds(tiny_model, tmp_path, cache, counted):
    from helpers.tiny import write_easy_csv

    train = write_easy_csv(tmp_path / "train.csv", 120, seed=1)
    sets = classify_sets(tiny_model, train)
    features_of("classify", sets)
    lines = train.read_text().splitlines()
    lines[5] = lines[5].replace(",", " truly,", 1)  # one text changed, same labels
    train.write_text("\n".join(lines) + "\n")
    _, said = features_of("classify", sets)
    assert counted["prepare"] == 2 and "cached in" in said


def test_a_changed_tokenizer_rebuilds(tiny_model, easy_data, cache, counted):
    from bertkit.core.tokenization import load_tokenizer
    from bertkit.training.feature_cache import tokenizer_hash

    sets = classify_sets(tiny_model, easy_data["train"])
    features_of("classify", sets)
    tokenizer = load_tokenizer(str(tiny_model), None, False)
    same = tokenizer_hash(tokenizer)
    tokenizer("some text", truncation=True, max_length=4)  # a call's settings are not the tokenizer's
    assert tokenizer_hash(tokenizer) == same
    tokenizer.add_tokens(["zorblax"])
    assert tokenizer_hash(tokenizer) != same
    features_of("classify", sets, tokenizer=tokenizer)
    assert counted["prepare"] == 2


def test_cache_off_writes_nothing_and_tokenizes_every_time(tiny_model, easy_data, cache, counted):
    sets = classify_sets(tiny_model, easy_data["train"], **{"data.cache": False})
    features_of("classify", sets)
    _, said = features_of("classify", sets)
    assert counted["prepare"] == 2 and "cache" not in said and entries(cache) == []


def test_an_incomplete_entry_is_rebuilt_and_an_unwritable_cache_is_only_a_note(
    tiny_model, easy_data, tmp_path, cache, counted, monkeypatch
):
    sets = classify_sets(tiny_model, easy_data["train"])
    features_of("classify", sets)
    (entry,) = [cache / name for name in entries(cache)]
    (entry / "key.json").unlink()  # as if written by hand, or half deleted
    _, said = features_of("classify", sets)
    assert counted["prepare"] == 2 and (entry / "key.json").is_file() and "cached in" in said

    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    monkeypatch.setenv("BERTKIT_CACHE", str(blocker))
    features, said = features_of("classify", sets)
    assert "could not be written" in said and len(features["train"]) > 0


@pytest.mark.parametrize("task_name", ["ner", "qa", "mlm-adapt"])
def test_every_task_goes_through_the_cache(task_name, tiny_model, tmp_path, cache, counted):
    rng = random.Random(0)
    if task_name == "ner":
        data = {"data.train": str(write_conll(tmp_path / "train.conll", 60, seed=1))}
    elif task_name == "qa":
        data = {"data.train": str(write_squad(tmp_path / "train.json", 60, seed=1))}
    else:
        corpus = tmp_path / "corpus.txt"
        corpus.write_text("\n".join(sentence(rng, "positive") for _ in range(200)) + "\n")
        data = {"data.train": str(corpus), "mlm.block_size": 32}
    sets = {"model.name": str(tiny_model), "model.max_length": 64, **data}
    first, _ = features_of(task_name, sets)
    second, said = features_of(task_name, sets)
    assert counted["prepare"] == 1 and "read from the cache" in said
    assert second["train"].to_dict() == first["train"].to_dict()


@pytest.mark.slow
def test_train_twice_through_the_cli(tiny_model, easy_data, tmp_path, cache, cli):
    config = tmp_path / "run.yaml"
    config.write_text(
        f"task: classify\nmodel:\n  name: {tiny_model}\n  max_length: 32\n"
        f"data:\n  train: {easy_data['train']}\ntrain:\n  max_steps: 2\n  eval_strategy: 'no'\n"
        f"output_dir: {tmp_path / 'model'}\n"
    )
    code, out, err = cli("train", "classify", "-c", config)
    assert code == 0, out + err
    assert "cached in" in out + err
    code, out, err = cli("train", "classify", "-c", config, "--overwrite")
    assert code == 0, out + err
    assert "read from the cache" in out + err and (tmp_path / "model" / "bertkit.json").is_file()

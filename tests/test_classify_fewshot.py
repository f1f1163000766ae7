"""Few-shot classification's parts that train nothing: pairs made from labels, the route
`classify.strategy` takes, and what it refuses."""

from collections import Counter

import pytest

from bertkit.config import load_config
from bertkit.core.errors import BertkitError
from bertkit.tasks.classify.label_pairs import NEGATIVE, POSITIVE, can_pair, label_sets, make_pairs, related
from bertkit.tasks.classify.task import TASK


def test_pairs_are_balanced_and_right():
    sets = label_sets([0, 0, 0, 1, 1, 2, 2, 2, 2], multi_label=False)
    pairs = make_pairs(sets, rounds=5, seed=3)
    kinds = Counter(target for _, _, target in pairs)
    assert kinds[POSITIVE] == kinds[NEGATIVE] == 5 * len(sets)
    for i, j, target in pairs:
        assert i != j
        assert (sets[i] == sets[j]) == (target == POSITIVE)
    # every example is the first of a pair once per round, with one partner of each kind
    assert Counter(i for i, _, _ in pairs) == dict.fromkeys(range(len(sets)), 10)


def test_pairs_follow_the_seed():
    sets = label_sets([0, 1] * 6, multi_label=False)
    assert make_pairs(sets, 3, seed=1) == make_pairs(sets, 3, seed=1)
    assert make_pairs(sets, 3, seed=1) != make_pairs(sets, 3, seed=2)


def test_an_example_alone_in_its_class_gets_no_pairs():
    sets = label_sets([0, 0, 1], multi_label=False)
    pairs = make_pairs(sets, rounds=4, seed=0)
    assert all(i != 2 for i, _, _ in pairs)  # no other example of class 1 to pair it with
    kinds = Counter(target for _, _, target in pairs)
    assert kinds[POSITIVE] == kinds[NEGATIVE] == 8
    assert make_pairs(label_sets([0, 1], multi_label=False), 3, seed=0) == []


def test_multi_label_pairs_share_a_label_or_none():
    rows = [[1, 0, 0], [1, 1, 0], [0, 1, 0], [0, 0, 1], [0, 0, 1], [0, 0, 0], [0, 0, 0]]
    sets = label_sets(rows, multi_label=True)
    assert sets[1] == {0, 1} and sets[5] == frozenset()
    pairs = make_pairs(sets, rounds=6, seed=5)
    kinds = Counter(target for _, _, target in pairs)
    assert kinds[POSITIVE] == kinds[NEGATIVE] > 0
    for i, j, target in pairs:
        assert related(sets[i], sets[j]) == (target == POSITIVE)
    # [1,0,0] and [0,1,0] share nothing, and both share a label with [1,1,0]
    assert not related(sets[0], sets[2]) and related(sets[0], sets[1]) and related(sets[2], sets[1])


def route_of(labels, **settings):
    import datasets

    settings = {"classify.strategy": "auto", **settings}
    cfg = load_config(None, [f"{k}={v}" for k, v in settings.items()])
    columns = {"text": ["x"] * len(labels), "label": labels}
    if "data.text_pair_column" in settings:
        columns["pair"] = ["y"] * len(labels)
    return TASK.training.setup({"train": datasets.Dataset.from_dict(columns)}, cfg)


def test_the_default_route_is_contrastive_on_little_data_and_finetune_above():
    # measured: the contrastive route led plain fine-tuning at 8, 16 and 64 a class (docs/benchmarks.md)
    import datasets

    cfg = load_config(None, [])
    assert cfg.classify.strategy == "auto" and cfg.classify.few_shot_examples == 64
    few = datasets.Dataset.from_dict({"text": ["x"] * 8, "label": ["a", "b"] * 4})
    assert TASK.training.setup({"train": few}, cfg)["strategy"] == "contrastive"
    many = datasets.Dataset.from_dict({"text": ["x"] * 130, "label": ["a", "b"] * 65})
    assert TASK.training.setup({"train": many}, cfg)["strategy"] == "finetune"


def test_auto_takes_the_contrastive_route_on_little_data(capsys):
    assert route_of(["a", "b"] * 8)["strategy"] == "contrastive"
    assert "classify strategy: contrastive (auto: 16 examples for 2 labels, at most" in said(capsys)
    assert route_of(["a", "b"] * 8, **{"classify.few_shot_examples": 7})["strategy"] == "finetune"
    assert "classify strategy: finetune (auto: 16 examples for 2 labels, more than" in said(capsys)


def said(capsys) -> str:
    return " ".join(capsys.readouterr().err.split())  # the console wraps long lines


def test_fine_tuning_settings_the_route_will_not_use_are_named(capsys):
    fine = {"train.learning_rate": "0.001", "train.epochs": "5", "train.warmup_ratio": "0.2"}
    assert route_of(["a", "b"] * 8, **fine)["strategy"] == "contrastive"
    text = said(capsys)
    assert "does not use train.epochs, train.learning_rate, train.warmup_ratio (fine-tuning settings)" in text, text
    assert "classify.strategy: finetune" in text
    route_of(["a", "b"] * 8, **{"train.batch_size": "8", "train.seed": "3"})  # the route reads these
    assert "does not use" not in said(capsys)
    route_of(["a", "b"] * 8, **fine, **{"classify.strategy": "finetune"})  # fine-tuning uses them
    assert "does not use" not in said(capsys)


def test_can_pair_agrees_with_make_pairs():
    import random

    rng = random.Random(0)
    for _ in range(300):
        n = rng.randint(1, 6)
        rows = [[rng.random() < 0.4 for _ in range(3)] for _ in range(n)]
        single = [r.index(True) if True in r else 0 for r in rows]
        sets = label_sets(rows, multi_label=True) if rng.random() < 0.5 else label_sets(single, False)
        assert can_pair(sets) == bool(make_pairs(sets, 1, seed=0)), sets


def test_auto_fine_tunes_labels_that_make_no_pairs(capsys):
    """One example a label, or a label on in every example: no pair can be made. `auto` took the
    contrastive route anyway and the run then failed, naming a strategy the user never set."""
    assert route_of(["a", "b", "c"])["strategy"] == "finetune"
    assert "classify strategy: finetune (auto: 3 examples for 3 labels, but no pairs can be made" in said(capsys)
    always = route_of(["x,y", "x", "x,y"], **{"data.label_separator": ","})
    assert always["problem_type"] == "multi_label" and always["strategy"] == "finetune"
    with pytest.raises(BertkitError, match="no pairs can be made from the labels.*set classify.strategy: finetune"):
        route_of(["a", "b", "c"], **{"classify.strategy": "contrastive"})


def test_the_route_counts_examples_in_whole_numbers(capsys):
    """17 examples for 2 labels is more than 8 a label; it was said as "8.5 examples per label" (and a
    big set as "33674.5 examples per label")."""
    assert route_of(["a", "b"] * 8 + ["a"], **{"classify.few_shot_examples": 8})["strategy"] == "finetune"
    text = said(capsys)
    assert "finetune (auto: 17 examples for 2 labels, more than classify.few_shot_examples (8) a label)" in text


def test_fine_tuning_names_the_contrastive_settings_it_will_not_use(capsys):
    settings = {"classify.strategy": "finetune", "classify.contrastive_learning_rate": "0.001"}
    assert route_of(["a", "b"] * 8, **settings)["strategy"] == "finetune"
    text = said(capsys)
    assert "classify strategy: finetune (asked for)" in text
    assert "fine-tuning does not use classify.contrastive_learning_rate" in text, text
    route_of(["a", "b"] * 8, **{"classify.strategy": "contrastive", "classify.pair_rounds": "3"})
    assert "does not use" not in said(capsys)


def test_auto_fine_tunes_what_the_contrastive_route_cannot_take():
    assert route_of(["a", "b"] * 4, **{"data.text_pair_column": "pair"})["strategy"] == "finetune"
    assert route_of(["0.5", "1.5", "2.0"])["strategy"] == "finetune"  # regression


def test_an_adapter_is_fine_tuned_and_refused_by_the_contrastive_route(capsys):
    adapter = {"train.adapter": "{r: 4}"}
    assert route_of(["a", "b"] * 4, **adapter)["strategy"] == "finetune"
    assert "classify strategy: finetune (auto: an adapter (train.adapter) is fine-tuned)" in said(capsys)
    with pytest.raises(BertkitError, match="contrastive tunes the whole encoder.*train.adapter"):
        route_of(["a", "b"] * 4, **adapter, **{"classify.strategy": "contrastive"})


def test_a_strategy_asked_for_is_kept():
    assert route_of(["a", "b"] * 4, **{"classify.strategy": "finetune"})["strategy"] == "finetune"
    assert route_of(["a", "b"] * 400, **{"classify.strategy": "contrastive"})["strategy"] == "contrastive"


def test_contrastive_refuses_pairs_of_texts_and_regression():
    with pytest.raises(BertkitError, match="contrastive works on single texts.*text_pair_column"):
        route_of(["a", "b"] * 4, **{"classify.strategy": "contrastive", "data.text_pair_column": "pair"})
    with pytest.raises(BertkitError, match="regression"):
        route_of(["0.5", "1.5"], **{"classify.strategy": "contrastive"})


def test_loss_settings_belong_to_fine_tuning():
    assert route_of(["a", "b"] * 4, **{"classify.class_weights": "balanced"})["strategy"] == "finetune"
    with pytest.raises(BertkitError, match="classify.loss: focal"):
        route_of(["a", "b"] * 4, **{"classify.strategy": "contrastive", "classify.loss": "focal"})


def test_multi_label_counts_each_label_of_an_example():
    info = route_of(["a,b", "a", "b"] * 3, **{"data.label_separator": ",", "classify.few_shot_examples": 6})
    assert info["problem_type"] == "multi_label" and info["strategy"] == "contrastive"  # 12 labels / 2 = 6


@pytest.mark.parametrize("n_labels", [2, 3])
def test_the_fitted_head_gives_softmax_logits_that_classify(n_labels):
    import numpy as np
    import torch

    from bertkit.tasks.classify.contrastive import fit_head

    rng = np.random.default_rng(0)
    centres = rng.normal(size=(n_labels, 8)) * 3
    labels = [i % n_labels for i in range(60)]
    vectors = centres[labels] + rng.normal(size=(60, 8)) * 0.3
    layer = torch.nn.Linear(8, n_labels)
    fit_head(layer, vectors, labels, n_labels, multi=False, c=1.0, seed=0)
    with torch.no_grad():
        predicted = layer(torch.as_tensor(vectors, dtype=torch.float32)).argmax(-1).tolist()
    assert predicted == labels


def test_the_multi_label_head_is_one_logistic_a_label():
    import numpy as np
    import torch

    from bertkit.tasks.classify.contrastive import FAR, fit_head

    rng = np.random.default_rng(1)
    rows = [[1, 0, 0], [0, 1, 0], [1, 1, 0]] * 20  # the third label is never on
    vectors = np.asarray(rows, dtype=float)[:, :2] * 4 - 2 + rng.normal(size=(60, 2)) * 0.3
    layer = torch.nn.Linear(2, 3)
    fit_head(layer, vectors, rows, 3, multi=True, c=1.0, seed=0)
    with torch.no_grad():
        on = torch.sigmoid(layer(torch.as_tensor(vectors, dtype=torch.float32))) > 0.5
    assert on.int().tolist() == rows
    assert layer.bias[2].item() == -FAR and not layer.weight[2].any()


def test_a_rare_label_is_predicted_on_unit_length_sentence_vectors():
    """Sentence vectors are unit length, so a logistic regression with scikit-learn's usual
    regularisation pulls a rare label's probability towards its share of the examples: a label on
    in 5 of 24 separable examples stayed under 0.47 on all of them, and threshold 0.5 predicted it
    nowhere. Each label's classes are weighted to balance, so 0.5 is where the vectors part."""
    import numpy as np
    import torch

    from bertkit.tasks.classify.contrastive import fit_head

    rng = np.random.default_rng(0)
    on = np.zeros(24, dtype=int)
    on[:5] = 1
    direction = rng.normal(size=32)
    noise = rng.normal(size=(24, 32))
    vectors = (
        noise / np.linalg.norm(noise, axis=1, keepdims=True) * 0.8
        + np.outer(on, direction / np.linalg.norm(direction)) * 0.6
    )
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    rows = [[int(x), 1 - int(x)] for x in on]
    layer = torch.nn.Linear(32, 2)
    fit_head(layer, vectors, rows, 2, multi=True, c=1.0, seed=0)
    with torch.no_grad():
        predicted = (torch.sigmoid(layer(torch.as_tensor(vectors, dtype=torch.float32))) > 0.5).int().tolist()
    assert predicted == rows


def test_the_pooling_follows_the_sentence_encoder_trained_from(tmp_path):
    import json

    from bertkit.tasks.classify.strategy import source_pooling

    (tmp_path / "config.json").write_text(json.dumps({"model_type": "bert"}))
    assert source_pooling(str(tmp_path)) == "mean"  # a plain model: the mean of the tokens
    (tmp_path / "modules.json").write_text(json.dumps([{"type": "sentence_transformers.models.Pooling", "path": "1"}]))
    (tmp_path / "1").mkdir()
    (tmp_path / "1" / "config.json").write_text(json.dumps({"pooling_mode_cls_token": True}))
    assert source_pooling(str(tmp_path)) == "cls"  # a sentence encoder that pools [CLS]
    (tmp_path / "config.json").write_text(json.dumps({"model_type": "bert", "bertkit_pooling": "mean"}))
    assert source_pooling(str(tmp_path)) == "mean"  # a contrastive bundle trained further keeps its own



def sentence_encoder_in_hub_cache(monkeypatch, cache, repo: str, source, mode: str = "cls", normalize: bool = True):
    """A Hugging Face cache, offline, holding `source`'s files as Hub model `repo`, with the files
    sentence-transformers writes (pooling `mode`, a Normalize module when `normalize`)."""
    import json
    import shutil

    import huggingface_hub

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", True)
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_CACHE", str(cache))

    owner, name = repo.split("/")
    snapshot = cache / f"models--{owner}--{name}" / "snapshots" / ("0" * 40)
    shutil.copytree(source, snapshot)
    (cache / f"models--{owner}--{name}" / "refs").mkdir()
    (cache / f"models--{owner}--{name}" / "refs" / "main").write_text("0" * 40)
    modules = [{"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
               {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"}]
    if normalize:
        modules.append({"idx": 2, "name": "2", "path": "2_Normalize", "type": "sentence_transformers.models.Normalize"})
    (snapshot / "modules.json").write_text(json.dumps(modules))
    (snapshot / "1_Pooling").mkdir()
    (snapshot / "1_Pooling" / "config.json").write_text(json.dumps({f"pooling_mode_{mode}_token": True}))
    (snapshot / "sentence_bert_config.json").write_text(json.dumps({"max_seq_length": 24}))
    return snapshot


def test_a_hub_sentence_encoders_pooling_is_read_from_its_files(tmp_path, tiny_model, monkeypatch):
    """A Hub id's sentence-transformers files were never read: a sentence encoder that pools [CLS]
    (BGE, say) was tuned and classified on the mean of its tokens."""
    from bertkit.tasks.classify.strategy import source_pooling

    sentence_encoder_in_hub_cache(monkeypatch, tmp_path / "hub", "acme/cls-encoder", tiny_model)
    assert source_pooling("acme/cls-encoder") == "cls"
    from bertkit.core.progress import console

    with console.capture() as said:
        assert source_pooling("acme/not-cached") == "mean"  # offline, nothing known of it: said
    assert "its pooling is not known" in " ".join(said.get().split())


def test_a_packaged_models_pooling_is_read_from_its_folder(tmp_path, tiny_model, monkeypatch):
    """A packaged model's Hub id (sentence-transformers/all-MiniLM-L6-v2 is one) was looked up in
    the Hub cache: offline, every few-shot run said its pooling could not be read, and a [CLS]
    encoder was tuned on the mean."""
    import json
    import shutil
    import sys
    import types

    from bertkit.core import models
    from bertkit.core.progress import console
    from bertkit.tasks.classify.strategy import source_pooling

    folder = tmp_path / "packaged"
    shutil.copytree(tiny_model, folder)
    (folder / "modules.json").write_text(json.dumps([{"type": "sentence_transformers.models.Pooling", "path": "1"}]))
    (folder / "1").mkdir()
    (folder / "1" / "config.json").write_text(json.dumps({"pooling_mode_cls_token": True}))
    module = types.ModuleType("acme_packaged_cls")
    module.get_model_path = lambda: folder
    monkeypatch.setitem(sys.modules, "acme_packaged_cls", module)
    monkeypatch.setitem(models.PACKAGED, "acme/packaged-cls", "acme_packaged_cls")
    with console.capture() as said:
        assert source_pooling("acme/packaged-cls") == "cls"
    assert "not known" not in said.get()


def test_a_sample_of_the_data_takes_the_route_the_whole_data_takes(tmp_path, capsys):
    """A quick try (data.max_train_samples, as `bertkit smoke` and `tune` sample too) decided the
    route on its sample: a data set that fine-tunes took the few-shot route on 64 examples."""
    from bertkit.config import load_config

    path = tmp_path / "train.csv"
    path.write_text("text,label\n" + "".join(f"text {i},{'ab'[i % 2]}\n" for i in range(400)))
    cfg = load_config(None, [f"data.train={path}", "model.name=m", "data.max_train_samples=32"])
    info = TASK.training.setup(TASK.training.load(cfg), cfg)
    assert info["strategy"] == "finetune"
    text = said(capsys)
    assert "360 examples for 2 labels, more than" in text and "before data.max_train_samples (32)" in text, text

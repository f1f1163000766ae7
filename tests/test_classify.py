import json

import numpy as np
import pytest

from bertkit.config import load_config
from bertkit.core import tokenization
from bertkit.core.errors import BertkitError
from bertkit.core.inference import padding_efficiency
from bertkit.tasks.classify.encoding import encode_columns
from bertkit.tasks.classify.labels import encode_labels
from bertkit.tasks.classify.task import TASK


def info_for(values, **cfg_values):
    import datasets

    cfg = load_config(None, [f"{k}={v}" for k, v in cfg_values.items()])
    ds = {"train": datasets.Dataset.from_dict({"text": ["x"] * len(values), "label": values})}
    return TASK.training.setup(ds, cfg)


def test_single_label_discovery_sorted_numerically():
    info = info_for(["10", "2", "2", "1"])
    assert info["problem_type"] == "single_label" and info["labels"] == ["1", "2", "10"]


def test_fixed_label_order_is_kept():
    info = info_for(["pos", "neg"], **{"data.labels": "[pos, neg]"})
    assert info["labels"] == ["pos", "neg"]
    assert encode_labels(["neg", "pos"], info, "train") == [1, 0]


def test_unseen_label_is_an_error():
    info = info_for(["pos", "neg"])
    with pytest.raises(BertkitError, match="validation data, example 2: label 'meh'.*known labels: neg, pos"):
        encode_labels(["pos", "meh"], info, "validation")


def test_one_label_only_is_an_error():
    with pytest.raises(BertkitError, match="only one label"):
        info_for(["pos", "pos"])


def test_regression_detected_from_floats():
    info = info_for(["0.5", "3.2", "1"])
    assert info["problem_type"] == "regression"
    assert encode_labels(["0.5", 2], info, "train") == [0.5, 2.0]
    with pytest.raises(BertkitError, match="not a number"):
        encode_labels(["high"], info, "train")


def test_multi_label_lists_and_separator():
    info = info_for([["a", "b"], ["c"], []])
    assert info["problem_type"] == "multi_label" and info["labels"] == ["a", "b", "c"]
    assert encode_labels([["b"], []], info, "train") == [[0, 1, 0], [0, 0, 0]]
    info = info_for(["a|b", "c"], **{"data.label_separator": "'|'"})
    assert info["labels"] == ["a", "b", "c"]
    assert encode_labels(["c|a"], info, "train") == [[1, 0, 1]]


def test_balanced_class_weights():
    import torch

    info = info_for(["a", "a", "a", "b"], **{"classify.class_weights": "balanced"})
    cfg = load_config(None, ["classify.class_weights=balanced"])
    loss = TASK.training.loss(info, cfg, {"labels": [0, 0, 0, 1]})
    logits = torch.zeros(2, 2)

    class Out:
        pass

    out = Out()
    out.logits = logits
    # equal logits: each example's loss is ln 2, weighted 4/6 (class a) and 4/2 (class b), over 2
    # examples (each counts once, so that micro-batches add up: bertkit/core/losses.py)
    value = loss(out, torch.tensor([0, 1]))
    assert value.item() == pytest.approx((4 / 6 + 2) * np.log(2) / 2, rel=1e-5)
    assert loss.settings["weights"] == pytest.approx({"a": 4 / 6, "b": 2.0})
    with pytest.raises(BertkitError, match="3 weights for 2 labels"):
        TASK.training.loss(info, load_config(None, ["classify.class_weights=[1, 2, 3]"]), {"labels": [0, 1]})


def test_keep_modes():
    ids = list(range(10))
    assert tokenization.keep(ids, 4, "head") == [0, 1, 2, 3]
    assert tokenization.keep(ids, 4, "tail") == [6, 7, 8, 9]
    assert tokenization.keep(ids, 4, "head+tail") == [0, 7, 8, 9]
    assert tokenization.keep(ids, 4, "head+tail", head_tokens=2) == [0, 1, 8, 9]
    assert tokenization.keep(ids[:3], 4, "tail") == [0, 1, 2]


def test_windows_cover_every_token():
    ids = list(range(23))
    pieces = tokenization.windows(ids, 8, 3)
    assert all(len(p) <= 8 for p in pieces)
    assert sorted(set(x for p in pieces for x in p)) == ids
    assert pieces[0][-3:] == pieces[1][:3]
    assert tokenization.windows(ids[:5], 8, 3) == [ids[:5]]


def test_truncation_with_real_tokenizer(tiny_model):
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(tiny_model)
    text = "great " + "film " * 40 + "awful"
    info = {"max_length": 12, "truncation": "head"}
    head = encode_columns(tok, [text], None, info)["input_ids"][0]
    tail = encode_columns(tok, [text], None, {**info, "truncation": "tail"})["input_ids"][0]
    both = encode_columns(tok, [text], None, {**info, "truncation": "head+tail", "head_tokens": 1})["input_ids"][0]
    words = lambda ids: tok.decode(ids, skip_special_tokens=True).split()  # noqa: E731
    assert len(head) == len(tail) == len(both) == 12
    assert head[0] == tok.cls_token_id and head[-1] == tok.sep_token_id
    assert both[0] == tok.cls_token_id and both[-1] == tok.sep_token_id
    assert words(head)[0] == "great" and "awful" not in words(head)
    assert words(tail)[-1] == "awful" and "great" not in words(tail)
    assert words(both)[0] == "great" and words(both)[-1] == "awful"


def test_padding_efficiency():
    assert padding_efficiency([4, 4, 4, 4], 2) == 1.0
    assert padding_efficiency([1, 9, 1, 9], 2, sort=False) == pytest.approx(20 / 36)
    assert padding_efficiency([1, 9, 1, 9], 2) == pytest.approx(20 / 20)


def test_metric_modules_load_by_path():
    from bertkit.core import metrics

    result = metrics.load("classification").compute(
        predictions=[0, 0, 1, 1], references=[0, 1, 1, 1], label_names=["neg", "pos"]
    )
    assert result["accuracy"] == 0.75
    assert result["confusion_matrix"] == [[1, 0], [1, 2]]
    assert result["per_class"]["pos"] == {
        "precision": 1.0,
        "recall": pytest.approx(2 / 3),
        "f1": pytest.approx(0.8),
        "support": 3,
    }
    assert result["f1_macro"] == pytest.approx((2 / 3 + 0.8) / 2)
    multi = metrics.load("multilabel").compute(predictions=[[1, 0], [1, 1]], references=[[1, 0], [0, 1]])
    assert multi["f1_micro"] == pytest.approx(0.8) and multi["subset_accuracy"] == 0.5
    reg = metrics.load("regression").compute(predictions=[1, 2, 3], references=[2, 4, 6.5])
    assert reg["spearman"] == pytest.approx(1.0) and reg["mae"] == pytest.approx(6.5 / 3)
    assert metrics.scalars(result)["accuracy"] == 0.75 and "per_class" not in metrics.scalars(result)


def test_shuffled_length_groups():
    import random

    from bertkit.core.inference import chunks
    from bertkit.training.sampling import ShuffledLengthGroups

    rng = random.Random(0)
    lengths = [rng.randint(3, 120) for _ in range(1000)]
    sampler = ShuffledLengthGroups(lengths, batch_size=16, seed=1, group=20)
    first = list(sampler)
    second = list(sampler)
    assert sorted(first) == list(range(1000)) and sorted(second) == list(range(1000))
    assert first != second
    batches = list(chunks(first, 16))
    computed = sum(max(lengths[i] for i in b) * len(b) for b in batches)
    assert sum(lengths) / computed > 0.9
    # batch order stays random: long and short batches are interleaved, not sorted
    means = [sum(lengths[i] for i in b) / len(b) for b in batches]
    ups = sum(b > a for a, b in zip(means, means[1:], strict=False))
    assert 0.3 < ups / (len(means) - 1) < 0.7
    sampler.set_epoch(0)
    assert list(sampler) == first


def test_head_learning_rate_gets_its_own_groups(tiny_model, tmp_path):
    from transformers import AutoModelForSequenceClassification

    from bertkit.config import load_config
    from bertkit.training.trainer import head_parameters, trainer_class, training_arguments

    cfg = load_config(None, ["train.learning_rate=1e-4", "train.head_learning_rate=3e-3", "train.eval_strategy=no"])
    model = AutoModelForSequenceClassification.from_pretrained(tiny_model, num_labels=2)
    head = head_parameters(model)
    assert head == {id(model.classifier.weight), id(model.classifier.bias)}
    args = training_arguments(cfg, tmp_path, "fp32", None)
    trainer = trainer_class(cfg)(model=model, args=args)
    optimizer = trainer.create_optimizer()
    rates = {id(p): g["lr"] for g in optimizer.param_groups for p in g["params"]}
    assert len(rates) == sum(1 for _ in model.parameters())  # every parameter, once
    assert {rates[i] for i in head} == {3e-3}
    assert {r for i, r in rates.items() if i not in head} == {1e-4}
    decay = {id(p): g["weight_decay"] for g in optimizer.param_groups for p in g["params"]}
    assert decay[id(model.classifier.weight)] == cfg.train.weight_decay and decay[id(model.classifier.bias)] == 0.0


def test_random_init_keeps_the_architecture_but_not_the_weights(tiny_model):
    """model.random_init: the no-pre-training baseline of the Japanese benchmark."""
    from transformers import AutoModel

    from bertkit.core import models

    trained = models.load_weights(AutoModel, str(tiny_model), load_config(None, []))
    fresh = models.load_weights(AutoModel, str(tiny_model), load_config(None, ["model.random_init=true"]))
    assert fresh.config.hidden_size == trained.config.hidden_size
    a, b = trained.embeddings.word_embeddings.weight, fresh.embeddings.word_embeddings.weight
    assert a.shape == b.shape and not np.allclose(a.detach().numpy(), b.detach().numpy())


def test_a_tokenizer_only_directory_loads_as_a_tokenizer(tiny_model, tmp_path):
    """`bertkit tokenizer train` writes no config.json; model.tokenizer may still point at it."""
    import shutil

    from bertkit.core import models

    folder = tmp_path / "tok"
    folder.mkdir()
    for name in ("tokenizer.json", "tokenizer_config.json"):
        shutil.copy(tiny_model / name, folder / name)
    assert len(tokenization.load_tokenizer(str(folder))) > 10
    with pytest.raises(BertkitError, match="no config.json"):
        models.resolve(str(folder))


# ---------------------------------------------------------------- one reading of a label


@pytest.mark.parametrize(
    ("value", "read"),
    [
        (1, "1"), (1.0, "1"), ("1", "1"), ("1.0", "1"), ("01", "1"), ("+1", "1"), ("1e0", "1"), (" 1 ", "1"),
        (0.5, "0.5"), ("0.50", "0.5"), ("-0", "0"), (True, "true"), (False, "false"), ("True", "True"),
        (" pos ", "pos"), ("007x", "007x"), (10**20, "100000000000000000000"),
        # far from 1 a number is written short, and never rounded to 0 (1e-20000000 read as 0 before)
        ("1e-900000", "1e-900000"), ("1e-20000000", "1e-20000000"), ("1.50E-400", "1.5e-400"),
        ("10e199", "1e200"), ("-2e+200", "-2e200"), (1e-300, "1e-300"),
    ],
)  # fmt: skip
def test_a_label_reads_the_same_whatever_its_spelling(value, read):
    from bertkit.tasks.classify.labels import label_name

    assert label_name(value) == read


def _labels_of(tmp_path, name: str, text: str) -> list[str]:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    cfg = load_config(None, [f"data.train={path}", "model.name=m"])
    return TASK.training.setup(TASK.training.load(cfg), cfg)["labels"]


def test_csv_json_lines_and_tsv_give_the_same_classes(tmp_path):
    """CSV `1`, `1.0` and `01` were three classes while JSON `1.0` counted as `1`."""
    rows = [("a", "1"), ("b", "1.0"), ("c", "01"), ("d", "0"), ("e", "0.0")] * 4
    csv = "text,label\n" + "".join(f"{t},{v}\n" for t, v in rows)
    tsv = "text\tlabel\n" + "".join(f"{t}\t{v}\n" for t, v in rows)
    numbers = {"1": 1, "1.0": 1.0, "01": 1, "0": 0, "0.0": 0.0}  # a JSON column holds one kind of value
    as_numbers = "".join(f'{{"text": "{t}", "label": {json.dumps(numbers[v])}}}\n' for t, v in rows)
    as_text = "".join(f'{{"text": "{t}", "label": "{v}"}}\n' for t, v in rows)
    files = (("d.csv", csv), ("d.tsv", tsv), ("n.jsonl", as_numbers), ("t.jsonl", as_text))
    assert [_labels_of(tmp_path, name, text) for name, text in files] == [["0", "1"]] * 4


def test_evaluate_reads_a_csv_label_as_training_read_the_json_one():
    info = {"problem_type": "single_label", "labels": ["0", "1"]}
    assert encode_labels(["1.0", "01", 1.0, 0], info, "test") == [1, 1, 1, 0]
    old = {"problem_type": "single_label", "labels": ["00", "01"]}  # a bundle trained before this reading
    assert encode_labels(["01", "00", "1"], old, "test") == [1, 0, 1]


@pytest.mark.parametrize("label", ['{"name": "pos"}', '[["pos"]]', "[{\"a\": 1}]"])
def test_an_object_or_a_nested_list_is_no_label_and_is_refused_with_its_line(tmp_path, label):
    """A JSON object as a label trained as its Python spelling ("{'name': 'pos'}"), exit 0."""
    path = tmp_path / "d.jsonl"
    rows = ['{"text": "a", "label": "pos"}', '{"text": "b", "label": "neg"}', f'{{"text": "c", "label": {label}}}']
    path.write_text("\n".join(rows * 3) + "\n", encoding="utf-8")
    cfg = load_config(None, [f"data.train={path}", "model.name=m"])
    with pytest.raises(BertkitError) as err:
        TASK.training.setup(TASK.training.load(cfg), cfg)
    assert f"{path}:3" in str(err.value) and "label" in str(err.value), str(err.value)


def test_predict_writes_the_gold_label_as_it_is_read():
    info = {"problem_type": "single_label", "labels": ["0", "1"], "label_column": "label"}
    assert TASK.prediction.read_gold("label", "1.0", info, "t.csv:2") == "1"
    multi = {"problem_type": "multi_label", "labels": ["1", "2"], "label_separator": "|"}
    assert TASK.prediction.read_gold("labels", "01|2.0", multi, "t.csv:2") == "1|2"
    assert TASK.prediction.read_gold("labels", [1.0, "02"], multi, "t.jsonl:2") == ["1", "2"]


@pytest.mark.parametrize(
    ("value", "problem"),
    [("1e5000", "single_label"), (float("nan"), "single_label"), ("NaN", "single_label"), ({"x": 1}, "single_label"),
     ([[1]], "single_label"), ("1|inf", "multi_label"), ([["a"]], "multi_label"), ({"a": 1}, "multi_label")],
)  # fmt: skip
def test_predict_refuses_a_gold_label_no_label_can_be_naming_its_line(value, problem):
    """As training and evaluate refuse it (a traceback from '1e5000', NaN written as 'nan' or
    'NaN' by format, an object written back as it was, before)."""
    info = {"problem_type": problem, "labels": ["0", "1"], "label_column": "label", "label_separator": "|"}
    with pytest.raises(BertkitError, match=r"^g\.csv:3: 'label' "):
        TASK.prediction.read_gold("label", value, info, "g.csv:3")

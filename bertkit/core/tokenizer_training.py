"""Training a WordPiece vocabulary on a corpus: `bertkit tokenizer train`, and the tokenizer of a
model pre-trained from scratch (`mlm.from_scratch`). The result is a BERT fast tokenizer that
`AutoTokenizer.from_pretrained` loads like any other, or, for Japanese, a `BertJapaneseTokenizer`
in the layout of the Tohoku models: MeCab (unidic-lite) words, then WordPiece pieces learnt on
those words."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from bertkit.core import outputs
from bertkit.core.errors import BertkitError
from bertkit.core.japanese import split_words, with_token_types
from bertkit.core.stable_vocab import word_counts, wordpiece_vocab

SPECIAL_TOKENS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]


def train_wordpiece(
    texts: Iterable[str],
    vocab_size: int,
    lowercase: bool = True,
    min_frequency: int = 2,
    max_length: int = 512,
    where: str = "the corpus",
    japanese: bool = False,
):
    """A BertTokenizerFast whose WordPiece vocabulary of exactly `vocab_size` entries is learnt
    from `texts`; a corpus too small for that many entries is an error that says how many fit.
    (The trainer keeps every character it sees, with its ## form, so with many distinct
    characters, as in Japanese, the vocabulary can come out larger than asked.)
    `japanese`: the text is cut into MeCab words first (NFKC, case always kept: `lowercase` does
    not apply), and the result is a BertJapaneseTokenizer that does the same at run time."""
    from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, processors
    from transformers import BertTokenizerFast


    if vocab_size <= len(SPECIAL_TOKENS):
        raise BertkitError(
            f"vocabulary size {vocab_size}: it must be larger than the {len(SPECIAL_TOKENS)} special tokens"
        )
    counted = _Counted(texts)
    tok = Tokenizer(models.WordPiece(unk_token="[UNK]"))
    if japanese:

        counted = _Counted(" ".join(split_words(text)) for text in counted)
        tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    else:
        tok.normalizer = normalizers.BertNormalizer(lowercase=lowercase, strip_accents=lowercase or None)
        tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tok.decoder = decoders.WordPiece()
    # learnt here rather than by the library's trainer, whose ties fall differently in every process
    # (bertkit/core/stable_vocab.py): the same text gives the same vocabulary
    vocab = wordpiece_vocab(word_counts(tok, counted), vocab_size, SPECIAL_TOKENS, min_frequency)
    if counted.lines == 0:
        raise BertkitError(f"{where}: no text to learn a vocabulary from (the input is empty)")
    found = len(vocab)
    if found < vocab_size:
        raise BertkitError(
            f"{where}: {counted.lines:,} lines support a vocabulary of only {found:,} entries (with "
            f"min_frequency {min_frequency}), fewer than the {vocab_size:,} asked for. Ask for at most "
            f"{found:,}, lower the minimum frequency, or add text."
        )
    tok.model = models.WordPiece(vocab, unk_token="[UNK]")
    if japanese:
        return japanese_tokenizer(tok, max_length)
    cls, sep = tok.token_to_id("[CLS]"), tok.token_to_id("[SEP]")
    tok.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B:1 [SEP]:1", special_tokens=[("[CLS]", cls), ("[SEP]", sep)]
    )
    return BertTokenizerFast(tokenizer_object=tok, model_max_length=max_length, do_lower_case=lowercase)


def japanese_tokenizer(tok, max_length: int):
    """A BertJapaneseTokenizer (MeCab with unidic-lite, then WordPiece) over the learnt pieces."""
    import tempfile

    from transformers import BertJapaneseTokenizer


    vocab = sorted(tok.get_vocab().items(), key=lambda item: item[1])
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "vocab.txt"
        path.write_text("".join(f"{token}\n" for token, _ in vocab), encoding="utf-8")
        tokenizer = BertJapaneseTokenizer(
            str(path),
            do_lower_case=False,
            word_tokenizer_type="mecab",
            subword_tokenizer_type="wordpiece",
            mecab_kwargs={"mecab_dic": "unidic_lite"},
            model_max_length=max_length,
        )
    return with_token_types(tokenizer)


class _Counted:
    """Iterates over the non-empty lines of `texts`, counting them."""

    def __init__(self, texts: Iterable[str]):
        self.texts, self.lines = texts, 0

    def __iter__(self):
        for text in self.texts:
            if text and text.strip():
                self.lines += 1
                yield text


def save_tokenizer(tokenizer, output: Path, overwrite: bool = False, protect=()) -> None:
    """Write the tokenizer directory in one step (staged, then renamed)."""

    with outputs.staged_dir(output, overwrite, "tokenizer", protect) as staged:
        tokenizer.save_pretrained(str(staged))

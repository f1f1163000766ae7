"""`bertkit model tiny --family NAME`: a tiny random model of an encoder family built from its
config class alone, with a tokenizer of the family's own kind (WordPiece, byte-level BPE or
Unigram) learnt from a few sentences, so a family can be smoke-tested without downloading any of
its models.

The tokenizer is the family's own class (`BertTokenizer`, `RobertaTokenizer`,
`XLMRobertaTokenizer`, ...: its normaliser, pre-tokenizer, special tokens and the way it joins a
pair) with a vocabulary learnt by `train_new_from_iterator`, the tokenizers library's trainer of
the same model kind, then settled so that it is the same in every process
(bertkit/core/stable_vocab.py). ModernBERT has no tokenizer class of its own (its checkpoints ship a plain
fast tokenizer): it gets a byte-level BPE with `[CLS] A [SEP] B [SEP]`, the layout of
answerdotai/ModernBERT-base. The sizes and the writing are `bertkit.tiny_models`'."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from bertkit.core import models, outputs
from bertkit.core.data.corpus import read_lines
from bertkit.core.errors import BertkitError
from bertkit.core.stable_vocab import settle
from bertkit.families import FAMILIES, canonical, check_family
from bertkit.tiny_models import KIND, Shape, write_tiny

DEFAULT_VOCAB_SIZE = 1000  # at most: a small text gives a Unigram vocabulary fewer pieces than this

# the text a vocabulary is learnt from when none is given: short sentences of the kinds the tasks
# read (reviews, names and places, questions), in both cases, with digits and punctuation
BUILT_IN_TEXT = """\
The film was wonderful, and the staff at the hotel were lovely.
This book is boring; the plot drags and the ending is awful.
Alice Smith met Bruno Rossi in Paris on 3 May 2021.
Fatima Okafor flew from Lagos to Kyoto with Gustav Novak.
Which place did Hana Tanaka visit? She visited Lima, then Oslo.
Who praised the service? Dmitri called it superb.
the phone's battery lasted 12 hours, but the screen felt cheap.
A great game, a terrible song, a delightful trip and a lousy meal.
What is the price of the room? It costs 120 euros a night.
Chiara saw the show near Perth and said: "really quite good!"
""".splitlines()


def learn_tokenizer(family: str, texts: Iterable[str], vocab_size: int = DEFAULT_VOCAB_SIZE, max_length: int = 512):
    """The family's tokenizer with a vocabulary of at most `vocab_size` entries learnt from `texts`."""
    import transformers


    models.quiet_transformers()
    spec = check_family(family)
    texts = [t for t in texts if t.strip()]
    if not texts:
        raise BertkitError("--vocab-from: no text to learn a vocabulary from (the input is empty)")
    # WordPiece families lower-case, as their tokenizer classes say by default; said here because
    # transformers 5.0's classes built their normaliser without it (5.1 and later with it)
    settings = {"do_lower_case": True} if spec.kind == "WordPiece" else {}
    seed = getattr(transformers, spec.tokenizer)(**settings) if spec.tokenizer else _modernbert_seed()
    specials = len(seed.all_special_tokens)
    try:
        learnt = seed.train_new_from_iterator(texts, vocab_size, show_progress=False)
    except Exception as err:  # the Unigram trainer raises a plain Exception when the characters do not fit
        if "not large enough" not in str(err):
            raise
        learnt = None
    if learnt is None or len(learnt) > vocab_size:
        # the least that fits: what the trainer kept whatever the size asked (every character, and
        # for byte-level BPE all 256 bytes); for Unigram the characters, the specials and its ▁
        unigram = learnt is None or spec.kind == "Unigram"  # its trainer adds the characters past the size asked
        least = len(alphabet(seed, texts)) + specials + 1 if unigram else len(learnt)
        what = "all 256 bytes" if spec.kind == "BPE" else "every character of the text it is learnt from"
        raise BertkitError(
            f"--vocab-size {vocab_size}: a {spec.kind} vocabulary keeps {what} and its {specials} special tokens, "
            f"{least} entries here. Use --vocab-size {least} or more"
        )
    learnt.model_max_length = max_length
    return settle(learnt, texts, vocab_size)  # the same vocabulary in every process (stable_vocab.py)


def alphabet(tokenizer, texts: list[str]) -> set[str]:
    """The characters of `texts` once the tokenizer's normaliser has run (what its trainer keeps)."""
    normalizer = tokenizer.backend_tokenizer.normalizer
    return {c for text in texts for c in (normalizer.normalize_str(text) if normalizer else text)}


def _modernbert_seed():
    """An empty byte-level BPE with ModernBERT's special tokens and pair layout."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors
    from transformers import PreTrainedTokenizerFast

    specials = ["[UNK]", "[CLS]", "[SEP]", "[PAD]", "[MASK]"]
    tok = Tokenizer(models.BPE(unk_token="[UNK]"))
    tok.add_special_tokens(specials)
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    tok.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B [SEP]", special_tokens=[("[CLS]", 1), ("[SEP]", 2)]
    )
    return PreTrainedTokenizerFast(
        tokenizer_object=tok,
        unk_token="[UNK]",
        cls_token="[CLS]",
        sep_token="[SEP]",
        pad_token="[PAD]",
        mask_token="[MASK]",
        model_input_names=["input_ids", "attention_mask"],
    )


def family_config(family: str):
    """The family's config with its class's defaults (the base size; `shrink` makes it tiny)."""
    import transformers

    config = getattr(transformers, check_family(family).config)()
    if hasattr(config, "reference_compile"):
        # ModernBERT compiles its layers with torch.compile where triton is installed (a CUDA
        # build of torch), which on a CPU runs worker processes and minutes of compiling
        config.reference_compile = False
    return config


def family_texts(paths: list[str], column: str) -> tuple[list[str], str]:
    """The lines to learn from (`--vocab-from` files, else the built-in sentences) and where they came from."""

    if not paths:
        return list(BUILT_IN_TEXT), "built-in sentences"
    texts = [line for path in paths for line in read_lines(path, column, option="--text-column")]
    return texts, ", ".join(paths)


def build_family(
    family: str,
    output: Path,
    shape=None,
    vocab_from: Iterable[str] = (),
    vocab_size: int | None = None,
    text_column: str = "text",
    seed: int = 0,
    overwrite: bool = False,
):
    """Build and write a tiny random `family` model to `output` (`bertkit.tiny_models.TinyModel`)."""

    family = canonical(family)
    spec = FAMILIES[family]
    shape = shape or Shape()
    shape.check()
    paths = [str(v) for v in vocab_from]
    output = Path(output)
    outputs.check_output_dir(output, overwrite, paths, KIND)  # --overwrite never replaces the text's folder
    outputs.check_writable(output)
    texts, where = family_texts(paths, text_column)
    tokenizer = learn_tokenizer(family, texts, vocab_size or DEFAULT_VOCAB_SIZE)
    config = family_config(family)
    vocabulary = f"{spec.kind} learnt from {where}"
    source = f"{family} ({spec.config} defaults)"
    return write_tiny(config, tokenizer, shape, output, source, vocabulary, paths, seed, overwrite)

"""Tiny random BERT models and easy synthetic data, built on the fly for end-to-end tests."""

from __future__ import annotations

import csv
import random
from pathlib import Path

from bertkit.core.stable_vocab import wordpiece_vocab  # the same vocabulary in every process

POSITIVE = ["great", "excellent", "wonderful", "superb", "lovely", "delightful"]
NEGATIVE = ["awful", "terrible", "dreadful", "horrible", "boring", "lousy"]
FILLER = (
    "the a this that film book meal room phone game show song hotel trip service staff plot "
    "screen battery price was is felt seemed really quite very rather and but with for on"
).split()


def sentence(rng: random.Random, label: str) -> str:
    words = rng.choices(FILLER, k=rng.randint(4, 12))
    key = rng.choice(POSITIVE if label == "positive" else NEGATIVE)
    words.insert(rng.randrange(len(words) + 1), key)
    return " ".join(words)


def write_easy_csv(path: Path, n: int, seed: int) -> Path:
    """A balanced two-class task a tiny model learns in seconds: the class is the keyword's."""
    rng = random.Random(seed)
    with open(path, "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["text", "label"])
        for i in range(n):
            label = "positive" if i % 2 == 0 else "negative"
            writer.writerow([sentence(rng, label), label])
    return path


def build_tiny_bert(folder: Path, texts: list[str], vocab_size: int = 400) -> Path:
    """A 2-layer, 64-wide random BERT with a WordPiece vocab learnt from `texts` (the same on every
    run, as is the model)."""
    from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, processors
    from transformers import BertConfig, BertModel, BertTokenizerFast

    specials = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    normalizer = normalizers.BertNormalizer(lowercase=True)
    splitter = pre_tokenizers.BertPreTokenizer()
    words = [w for text in texts for w, _ in splitter.pre_tokenize_str(normalizer.normalize_str(text))]
    tok = Tokenizer(models.WordPiece(wordpiece_vocab(words, vocab_size, specials), unk_token="[UNK]"))
    tok.normalizer = normalizer
    tok.pre_tokenizer = splitter
    tok.decoder = decoders.WordPiece()
    cls, sep = tok.token_to_id("[CLS]"), tok.token_to_id("[SEP]")
    tok.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B:1 [SEP]:1", special_tokens=[("[CLS]", cls), ("[SEP]", sep)]
    )
    folder.mkdir(parents=True, exist_ok=True)
    fast = BertTokenizerFast(tokenizer_object=tok, model_max_length=128)
    fast.save_pretrained(folder)
    config = BertConfig(
        vocab_size=tok.get_vocab_size(),
        hidden_size=64,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=128,
        max_position_embeddings=128,
    )
    import torch

    torch.manual_seed(0)  # the same tiny model every run: tests must not be flaky
    BertModel(config).save_pretrained(folder)
    return folder


def build_tiny_japanese_bert(folder: Path, texts: list[str], vocab_size: int = 600) -> Path:
    """A 2-layer, 64-wide random BERT with a MeCab + WordPiece vocabulary (BertJapaneseTokenizer)
    of `texts`' MeCab words (the same on every run), the layout of the Tohoku Japanese models."""
    import torch
    from tokenizers import Tokenizer, models
    from transformers import BertConfig, BertModel

    from bertkit.core.japanese import split_words
    from bertkit.core.tokenizer_training import SPECIAL_TOKENS, japanese_tokenizer

    words = [w for text in texts if text.strip() for w in split_words(text)]
    pieces = Tokenizer(models.WordPiece(wordpiece_vocab(words, vocab_size, SPECIAL_TOKENS), unk_token="[UNK]"))
    tokenizer = japanese_tokenizer(pieces, 128)
    folder.mkdir(parents=True, exist_ok=True)
    tokenizer.save_pretrained(folder)
    config = BertConfig(
        vocab_size=len(tokenizer),
        hidden_size=64,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=128,
        max_position_embeddings=128,
    )
    torch.manual_seed(0)
    BertModel(config).save_pretrained(folder)
    return folder


PEOPLE = ["alice", "bruno", "chiara", "dmitri", "emeka", "fatima", "gustav", "hana"]
SURNAMES = ["smith", "rossi", "novak", "okafor", "tanaka"]
PLACES = ["paris", "lagos", "kyoto", "lima", "oslo", "perth", "quito", "riga"]
VERBS = "met visited left saw called praised flew to from near with about".split()


def ner_sentence(rng: random.Random, length: int | None = None) -> tuple[list[str], list[str]]:
    """Filler words with people (one or two words) and places; IOB2 tags."""
    tokens, tags = [], []
    target = length or rng.randint(5, 14)
    while len(tokens) < target:
        roll = rng.random()
        if roll < 0.2:
            tokens.append(rng.choice(PEOPLE))
            tags.append("B-PER")
            if rng.random() < 0.5:
                tokens.append(rng.choice(SURNAMES))
                tags.append("I-PER")
        elif roll < 0.35:
            tokens.append(rng.choice(PLACES))
            tags.append("B-LOC")
        else:
            tokens.append(rng.choice(VERBS + FILLER[:10]))
            tags.append("O")
    return tokens, tags


def to_iob1(tags: list[str]) -> list[str]:
    """CoNLL-2003 style: I- everywhere, B- only right after an entity of the same type."""
    out = []
    for i, tag in enumerate(tags):
        if tag.startswith("B-") and not (i and tags[i - 1] != "O" and tags[i - 1][2:] == tag[2:]):
            out.append("I-" + tag[2:])
        else:
            out.append(tag)
    return out


def write_conll(path: Path, n: int, seed: int, long_every: int = 0) -> Path:
    rng = random.Random(seed)
    lines = ["-DOCSTART- -X- -X- O", ""]
    for i in range(n):
        tokens, tags = ner_sentence(rng, 60 if long_every and i % long_every == 0 else None)
        lines += [f"{t} X X {g}" for t, g in zip(tokens, to_iob1(tags), strict=True)] + [""]
    path.write_text("\n".join(lines) + "\n")
    return path


def write_spans(path: Path, n: int, seed: int) -> Path:
    import json

    rng = random.Random(seed)
    with open(path, "w", encoding="utf-8") as handle:
        for _ in range(n):
            tokens, tags = ner_sentence(rng)
            text, entities, position = "", [], 0
            for token, tag in zip(tokens, tags, strict=True):
                start = len(text) + (1 if text else 0)
                text = f"{text} {token}" if text else token
                if tag.startswith("B-"):
                    entities.append({"start": start, "end": start + len(token), "type": tag[2:]})
                elif tag.startswith("I-"):
                    entities[-1]["end"] = start + len(token)
                position += 1
            handle.write(json.dumps({"text": text.capitalize(), "entities": entities}) + "\n")
    return path


def qa_paragraph(rng: random.Random, words: int, with_person: bool) -> tuple[str, str, str | None]:
    """A context of filler words holding one place and (maybe) one person; returns (context,
    place, person)."""
    tokens = [rng.choice(VERBS + FILLER[:10]) for _ in range(words)]
    place = rng.choice(PLACES)
    tokens.insert(rng.randrange(len(tokens) + 1), place)
    person = None
    if with_person:
        person = f"{rng.choice(PEOPLE)} {rng.choice(SURNAMES)}"
        tokens.insert(rng.randrange(len(tokens) + 1), person)
    return " ".join(tokens), place, person


def write_squad(path: Path, n: int, seed: int, version_2: bool = False, long_every: int = 0) -> Path:
    """Official SQuAD JSON: 'which place ?' (always answerable) and 'which person ?' (answerable
    only when the context names one; without a person it is unanswerable, v2 only)."""
    import json

    rng = random.Random(seed)
    paragraphs = []
    for i in range(n):
        words = 120 if long_every and i % long_every == 0 else rng.randint(6, 16)
        has_person = not version_2 or rng.random() < 0.6
        context, place, person = qa_paragraph(rng, words, has_person)
        qas = [_qa(f"q{i}-place", "which place ?", context, place)]
        if person:
            qas.append(_qa(f"q{i}-person", "which person ?", context, person))
        elif version_2:
            qas.append({"id": f"q{i}-person", "question": "which person ?", "answers": [], "is_impossible": True})
        paragraphs.append({"context": context, "qas": qas})
    data = {"version": "v2.0" if version_2 else "1.1", "data": [{"title": "tiny", "paragraphs": paragraphs}]}
    path.write_text(json.dumps(data, indent=1), encoding="utf-8")
    return path


def _qa(qid: str, question: str, context: str, answer: str) -> dict:
    start = context.index(answer)
    return {"id": qid, "question": question, "answers": [{"text": answer, "answer_start": start}]}

"""The encoder families bertkit builds tiny models of from their config class alone
(`bertkit model tiny --family NAME`, bertkit/tiny_families.py): each one's config class, tokenizer
class and tokenizer kind. A table apart from the building, so the command line can list the
families without loading what builds them."""

from __future__ import annotations

from dataclasses import dataclass

from bertkit.core.errors import BertkitError, did_you_mean


@dataclass(frozen=True)
class Family:
    config: str  # the transformers config class
    tokenizer: str | None  # the family's tokenizer class; None: ModernBERT's plain BPE
    kind: str  # the tokenizer model: WordPiece, BPE or Unigram


FAMILIES = {
    "bert": Family("BertConfig", "BertTokenizer", "WordPiece"),
    "distilbert": Family("DistilBertConfig", "DistilBertTokenizer", "WordPiece"),
    "electra": Family("ElectraConfig", "ElectraTokenizer", "WordPiece"),
    "mpnet": Family("MPNetConfig", "MPNetTokenizer", "WordPiece"),
    "roberta": Family("RobertaConfig", "RobertaTokenizer", "BPE"),
    "modernbert": Family("ModernBertConfig", None, "BPE"),
    "albert": Family("AlbertConfig", "AlbertTokenizer", "Unigram"),
    "deberta-v2": Family("DebertaV2Config", "DebertaV2Tokenizer", "Unigram"),
    "xlm-roberta": Family("XLMRobertaConfig", "XLMRobertaTokenizer", "Unigram"),
}


def family_names() -> list[str]:
    return list(FAMILIES)


def canonical(name: str) -> str:
    """A family's name as FAMILIES has it: case and `_` for `-` do not matter (BERT, deberta_v2)."""
    key = name.strip().lower().replace("_", "-")
    if key not in FAMILIES:
        raise BertkitError(
            f"--family {name}: not a family bertkit builds from scratch{did_you_mean(key, FAMILIES)}; "
            f"families: {', '.join(FAMILIES)}. For another family give --from with a model of it."
        )
    return key


def check_family(name: str) -> Family:
    return FAMILIES[canonical(name)]

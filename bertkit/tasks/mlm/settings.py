"""The `mlm:` section: the settings of masked-LM training (bertkit/tasks/mlm)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from bertkit.core.settings import Section


class MlmConfig(Section):
    mode: Literal["blocks", "lines"] = Field(
        "blocks", description="blocks: join all text and cut it into blocks of block_size; lines: one example a line"
    )
    block_size: int | None = Field(None, ge=8, description="tokens per block (blocks mode); model.max_length when null")
    long_lines: Literal["truncate", "windows"] = Field(
        "truncate", description="lines mode: cut a line longer than model.max_length, or split it into windows"
    )
    mlm_probability: float = Field(0.15, gt=0, lt=1, description="share of tokens (or words) chosen for prediction")
    whole_word_masking: bool = Field(False, description="choose whole words: all of a word's pieces or none")
    from_scratch: bool = Field(
        False, description="pre-train a new BERT of the size below (model.name is then not used)"
    )
    vocab_size: int = Field(8000, ge=16, description="from scratch: WordPiece vocabulary learnt from the training text")
    lowercase: bool = Field(True, description="from scratch: the new vocabulary lowercases text")
    japanese: bool = Field(
        False,
        description="from scratch: cut text into MeCab words first (a BertJapaneseTokenizer, as the Tohoku models)",
    )
    hidden_size: int = Field(256, ge=8, description="from scratch: width of the model")
    num_layers: int = Field(4, ge=1, description="from scratch: encoder layers")
    num_heads: int = Field(4, ge=1, description="from scratch: attention heads (must divide hidden_size)")
    intermediate_size: int = Field(1024, ge=8, description="from scratch: feed-forward width")
    initializer_range: float = Field(
        0.02,
        gt=0,
        le=1,
        description="from scratch: standard deviation of the initial weights (BERT's 0.02 was chosen for 768 "
        "wide; narrow models can need larger ones to start reading word order)",
    )
    dropout: float = Field(
        0.1,
        ge=0,
        lt=1,
        description="from scratch: dropout while pre-training (0 speeds up learning on small budgets); "
        "the saved model has BERT's 0.1 for fine-tuning",
    )
    top_k: int = Field(5, ge=1, description="fill-mask predictions: candidates listed per [MASK]")
    nsp: bool = Field(
        False,
        description="also train next-sentence prediction on sentence pairs from documents (one sentence a line, "
        "a blank line between documents); off as RoBERTa found it unnecessary",
    )

    @model_validator(mode="after")
    def _heads_divide(self) -> MlmConfig:
        if self.hidden_size % self.num_heads:
            raise ValueError(f"num_heads ({self.num_heads}) must divide hidden_size ({self.hidden_size})")
        return self


"""QA's words in the model card: transformers 5 has no question-answering pipeline."""

from __future__ import annotations

from typing import TYPE_CHECKING

from bertkit.tasks.contract import Card

if TYPE_CHECKING:
    pass


class QaCard(Card):
    def summary(self, info: dict) -> str:
        return "SQuAD v2: may answer nothing" if info.get("version_2") else "SQuAD v1: always answers"

    def cli_usage(self, where: str) -> str:
        return f"bertkit predict --model {where} --input questions.jsonl --output predictions.jsonl"

    def python_usage(self, where: str, info: dict, pipeline: str) -> list[str]:
        return [  # transformers 5 has no question-answering pipeline
            "from transformers import AutoModelForQuestionAnswering, AutoTokenizer",
            f'model = AutoModelForQuestionAnswering.from_pretrained("{where}")',
            f'tokenizer = AutoTokenizer.from_pretrained("{where}")',
        ]

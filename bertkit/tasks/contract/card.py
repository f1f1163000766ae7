"""The model card part of the task contract (`Card`): the task's own words in a bundle's README.md
(bertkit/training/card.py writes the rest). The default fits a model that transformers'
`pipeline` runs under the task's pipeline tag (its registry record's)."""

from __future__ import annotations


class Card:
    def summary(self, info: dict) -> str:
        """A few words on what kind of model this is."""
        return info.get("problem_type") or info["task"]

    def cli_usage(self, where: str) -> str:
        return f"bertkit predict --model {where} --input texts.txt --output predictions.jsonl"

    def python_usage(self, where: str, info: dict, pipeline: str) -> list[str]:
        """Plain transformers code that runs the bundle at `where`."""
        return ["from transformers import pipeline", f'model = pipeline("{pipeline}", model="{where}")']

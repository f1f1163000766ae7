"""mlm-adapt's words in the model card."""

from __future__ import annotations

from bertkit.tasks.contract import Card


class MlmCard(Card):
    def summary(self, info: dict) -> str:
        masking = "whole-word masking" if info.get("whole_word_masking") else "token masking"
        if info.get("nsp"):
            return f"masked LM + next-sentence prediction, pairs of up to {info.get('block_size')} tokens, {masking}"
        return f"masked LM, {info.get('mode')} of {info.get('block_size')} tokens, {masking}"

    def cli_usage(self, where: str) -> str:
        return f"bertkit predict --model {where} --input masked.txt --output predictions.jsonl"

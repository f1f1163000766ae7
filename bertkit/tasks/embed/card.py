"""embed's words in the model card."""

from __future__ import annotations

from bertkit.tasks.contract import Card


class EmbedCard(Card):
    def summary(self, info: dict) -> str:
        norm = ", L2-normalised" if info.get("normalize") else ""
        return f"sentence embeddings: {info.get('pooling')} pooling{norm}, {info.get('loss')} loss"

    def cli_usage(self, where: str) -> str:
        return f"bertkit embed --model {where} --input texts.txt --output vectors.npy"

    def python_usage(self, where: str, info: dict, pipeline: str) -> list[str]:
        return [
            "import torch",
            "from transformers import AutoModel, AutoTokenizer",
            f'model, tokenizer = AutoModel.from_pretrained("{where}"), AutoTokenizer.from_pretrained("{where}")',
            'batch = tokenizer(["a sentence"], padding=True, truncation=True, return_tensors="pt")',
            "with torch.no_grad():",
            "    tokens = model(**batch).last_hidden_state  # pool as bertkit.json's `pooling` says; mean:",
            '    mask = batch["attention_mask"].unsqueeze(-1)',
            "    vectors = (tokens * mask).sum(1) / mask.sum(1)",
        ]

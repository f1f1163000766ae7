"""rerank's words in the model card."""

from __future__ import annotations

from bertkit.tasks.contract import Card
from bertkit.tasks.rerank.groups import GROUPED


class RerankCard(Card):
    def summary(self, info: dict) -> str:
        how = "listwise loss over groups of negatives" if info.get("kind") == GROUPED else "labelled pairs"
        return f"cross-encoder reranker ({how})"

    def cli_usage(self, where: str) -> str:
        return f"bertkit search --model BI_ENCODER --corpus corpus.txt --queries queries.txt --rerank {where}"

    def python_usage(self, where: str, info: dict, pipeline: str) -> list[str]:
        return [
            "import torch",
            "from transformers import AutoModelForSequenceClassification, AutoTokenizer",
            f'model = AutoModelForSequenceClassification.from_pretrained("{where}")',
            f'tokenizer = AutoTokenizer.from_pretrained("{where}")',
            'batch = tokenizer(["a query"], ["a passage"], padding=True, truncation=True, return_tensors="pt")',
            "with torch.no_grad():",
            "    scores = model(**batch).logits[:, 0]  # higher is more relevant",
        ]

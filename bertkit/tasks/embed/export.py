"""embed's export: the pooled (and, when the bundle normalises, unit-length) sentence vector;
the int8 check compares vectors by cosine."""

from __future__ import annotations

import numpy as np

from bertkit.core.pooling import mean_in_token_order, pool
from bertkit.tasks.contract import Export

# an int8 vector agrees with its fp32 one at this cosine or above: search hits and similarity scores
# then move in the third decimal at most (docs/deployment.md)
AGREEING_COSINE = 0.99


class EmbedExport(Export):
    outputs = ("sentence_embedding",)
    prediction_fields = ("embedding",)

    def forward(self, model, inputs, info):
        """The pooled (and, when the bundle normalises, unit-length) vector, pooled with the
        bundle's own settings as `bertkit.tasks.embed.encoder` reads them."""
        import torch

        pooling = info.get("pooling") or "mean"
        out, mask = model(**inputs), inputs["attention_mask"]
        vectors = mean_in_token_order(out, mask) if pooling == "mean" else pool(out, mask, pooling)
        return torch.nn.functional.normalize(vectors, p=2, dim=-1) if info.get("normalize") else vectors

    def agreement(self, first, second) -> dict:
        """The cosine of each record's two vectors: the least and the mean; a record agrees when its
        vectors' cosine is at least AGREEING_COSINE."""
        a = np.array([r["embedding"] for r in first if not r.get("empty")], dtype=np.float64)
        b = np.array([r["embedding"] for r in second if not r.get("empty")], dtype=np.float64)
        cosine = (a * b).sum(1) / np.maximum(np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1), 1e-12)
        return {
            "records": len(a), "cosine_min": float(cosine.min()), "cosine_mean": float(cosine.mean()),
            "agreement": float(np.mean(cosine >= AGREEING_COSINE)),
        }  # fmt: skip

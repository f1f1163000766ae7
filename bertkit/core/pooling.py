"""Token vectors to one vector a text (mean, [CLS], max, or the pooler), and unit-length rows: the
arithmetic every embedding command shares.
"""

from __future__ import annotations

import numpy as np

from bertkit.core.errors import BertkitError

POOLINGS = ("mean", "cls", "max", "pooler")


def pool(out, attention_mask, mode: str):
    """One vector per sequence from a model output: the mean or max of its real tokens, the
    first token ([CLS]), or BERT's pooler (dense + tanh over [CLS])."""
    # in fp32 whatever the model ran in (a no-op for fp32 models): a half-precision mean of many
    # token vectors would lose digits the vectors' cosines keep
    hidden = (out.last_hidden_state if hasattr(out, "last_hidden_state") else out[0]).float()
    if mode == "cls":
        return hidden[:, 0]
    if mode == "pooler":
        pooled = getattr(out, "pooler_output", None)
        if pooled is None:
            raise BertkitError("pooling 'pooler': this model has no pooler layer; use mean, cls or max")
        return pooled.float()
    mask = attention_mask.unsqueeze(-1).to(hidden.dtype)
    if mode == "max":
        return hidden.masked_fill(mask == 0, float("-inf")).max(dim=1).values
    return (hidden * mask).sum(dim=1) / mask.sum(dim=1).clamp(min=1e-9)


def l2_normalize(vectors):
    import torch

    return torch.nn.functional.normalize(vectors, p=2, dim=-1)


def unit_rows(matrix: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    return matrix / np.maximum(norms, 1e-12)


def cosines(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The cosine of each row of `a` with the same row of `b` (unit rows), summed in float64: every
    command reports a pair's cosine through this or `cosine_matrix`, which agree to the last digit
    shown (float32 dot products summed in another order differed in the sixth decimal)."""
    return np.einsum("ij,ij->i", a.astype(np.float64), b.astype(np.float64))


def cosine_matrix(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The cosine of every row of `a` with every row of `b` (unit rows), as `cosines` gives them."""
    return a.astype(np.float64) @ b.astype(np.float64).T


def unit_vectors(encoder, texts: list[str], batch_size: int = 32) -> np.ndarray:
    """Unit vectors of `texts`; an empty text gets a row of zeros (it is not run through the model)."""
    vectors = np.zeros((len(texts), encoder.dimension), dtype=np.float32)
    filled = [i for i, t in enumerate(texts) if t.strip()]
    if filled:
        vectors[filled] = unit_rows(encoder.encode([texts[i] for i in filled], batch_size))
    return vectors


def mean_in_token_order(out, attention_mask):
    """Mean pooling summed token after token (a running sum read at the last real token), so a
    text's vector is the same bits alone and padded in any batch: onnxruntime's ReduceSum, and a
    mask @ tokens MatMul too, sum the token axis in another order for another padded length
    (measured: 7 of 30 MiniLM vectors differed in the last bits alone and in a batch). CumSum adds
    in token order by definition, and the padding's zeros come after (or before) the real tokens.
    The count of real tokens is a sum of ones, exact in any order."""
    import torch

    hidden = out.last_hidden_state if hasattr(out, "last_hidden_state") else out[0]
    mask = attention_mask.unsqueeze(-1).to(hidden.dtype)
    running = torch.cumsum(hidden * mask, dim=1)
    # the last real token (counted in int32: onnxruntime before 1.19 has no ArgMax of int64)
    last = (torch.cumsum(attention_mask, dim=1) * attention_mask).to(torch.int32).argmax(dim=1)
    total = torch.gather(running, 1, last.view(-1, 1, 1).expand(-1, 1, hidden.shape[-1])).squeeze(1)
    return total / mask.sum(dim=1).clamp(min=1e-9)

"""Model inputs from texts (blocks of the joined text, or one example a line, with windows for long
lines) and what fill-mask gives back: the top candidates of each [MASK], readable."""

from __future__ import annotations

import numpy as np

from bertkit.core import tokenization
from bertkit.core.data.records import place_of, text_value
from bertkit.core.errors import BertkitError
from bertkit.core.inference import softmax, to_numpy
from bertkit.core.progress import console
from bertkit.tasks.contract import require_field
from bertkit.tasks.mlm.masked_positions import predict_masked_only
from bertkit.tasks.mlm.scoring import mask_like

FINE_TUNING_DROPOUT = 0.1  # BERT's, for a model pre-trained here


def examples(tokenizer, texts: list[str], info: dict, where: str, partial: bool = False) -> list[dict]:
    """Model inputs from texts: blocks of block_size tokens cut from the joined text, or one
    example a line (long lines cut or split into windows, as info says). `partial`: the texts
    are one batch of a stream, which may give no example, and whose notes would repeat."""
    budget_block = info["block_size"] - tokenization.special_budget(tokenizer)
    budget_line = info["max_length"] - tokenization.special_budget(tokenizer)
    ids = tokenizer(texts, add_special_tokens=False)["input_ids"]
    if info["mode"] == "blocks":
        joined: list[int] = []
        for piece in ids:
            if piece:
                joined += [*piece, tokenizer.sep_token_id] if tokenizer.sep_token_id is not None else piece
        full = len(joined) // budget_block
        if where == "train" and full == 0 and not partial:
            raise BertkitError(
                f"the training text has {len(joined):,} tokens, too few for one block of {info['block_size']}: "
                "add text, lower mlm.block_size, or use mlm.mode: lines"
            )
        cut = full * budget_block if where == "train" else len(joined)  # training drops the ragged end
        pieces = [joined[i : i + budget_block] for i in range(0, cut, budget_block)]
    else:
        pieces, long = [], 0
        windows = info.get("long_lines") == "windows"
        for piece in ids:
            if len(piece) > budget_line:
                long += 1
                pieces += tokenization.windows(piece, budget_line, 0) if windows else [piece[:budget_line]]
            elif piece:
                pieces.append(piece)
        if long and not partial:
            what = "split into windows" if windows else "cut (mlm.long_lines: windows keeps all of them)"
            console.print(
                f"[yellow]note:[/yellow] {where}: {long:,} lines longer than {budget_line} tokens were {what}"
            )
    if not pieces and not partial:
        raise BertkitError(f"{where}: no tokens in the text")
    return [tokenization.wrap(tokenizer, piece) for piece in pieces]


def top_candidates(tokenizer, k: int):
    specials = sorted(set(tokenizer.all_special_ids))  # never offered: "<mask>" is no answer to a mask

    def pick(out, inputs, rows) -> list:
        at_mask = to_numpy(inputs["input_ids"]) == tokenizer.mask_token_id
        probs = softmax(to_numpy(out.logits[mask_like(out.logits, at_mask)]).astype(np.float64))
        ranked = probs.copy()
        ranked[:, [i for i in specials if i < probs.shape[-1]]] = -1.0
        top = np.argsort(-ranked, axis=-1, kind="stable")[:, : min(k, probs.shape[-1])]
        picked = np.take_along_axis(probs, top, -1)
        counts = at_mask.sum(1)
        return list(zip(np.split(top, np.cumsum(counts)[:-1]), np.split(picked, np.cumsum(counts)[:-1]), strict=True))

    return pick


def described(record: dict, column: str, found, tokenizer) -> dict:
    ids, probs = found
    out = {k: record[k] for k in ("id",) if k in record}
    out["text"] = record[column]
    masks, best = [], []
    for position, (row_ids, row_probs) in enumerate(zip(ids, probs, strict=True)):
        row_ids = [int(i) for i in row_ids]
        tokens = [readable(tokenizer, i) for i in row_ids]
        candidates = [
            {"token": t, "id": i, "score": round(float(p), 6)}
            for t, i, p in zip(tokens, row_ids, row_probs, strict=True)
        ]
        masks.append({"mask": position, "candidates": candidates})
        best.append(tokens[0])
    # each mask filled in its own place: replacing the first mask left in the text went wrong when
    # a fill held the mask's own text
    parts = record[column].split(tokenizer.mask_token)
    filled = parts[0] + "".join(
        (best[i] if i < len(best) else tokenizer.mask_token) + part for i, part in enumerate(parts[1:])
    )
    out["masks"], out["filled"] = masks, filled
    return out


def readable(tokenizer, token_id: int) -> str:
    """A vocabulary entry as the text it stands for: a byte-level entry's bytes decoded (ĠFrance is
    " France"), SentencePiece's ▁ and WordPiece's ## (a word's continuation) gone, the space a
    token carries before it left to the text around the mask."""
    return tokenizer.decode([token_id], clean_up_tokenization_spaces=False).strip().removeprefix("##")


def text_at(record: dict, column: str, number: int) -> str:
    require_field(record, column, place_of(record, number))
    return text_value(record[column], place_of(record, number), column)


def no_mask(where: str, text: str, mask: str) -> str:
    return f"{where}: no {mask} in {text[:80]!r}; mark the word to guess with {mask}"


def masked_only(model):
    """Training scores only the masked positions against the vocabulary (same loss, about half
    the time of a step for a small model); see bertkit.tasks.mlm.masked_positions."""

    predict_masked_only(model)
    return model


def completed(info: dict, model) -> dict:
    """A bundle's settings, with defaults for a plain Hugging Face masked-LM model."""
    limit = min(int(getattr(model.config, "max_position_embeddings", 512)), 512)
    defaults = {"max_length": limit, "block_size": limit, "mode": "lines", "long_lines": "truncate"}
    return {**defaults, "mlm_probability": 0.15, "whole_word_masking": False, "seed": 42, "top_k": 5, **info}

"""Masked-LM masking: choose 15% of the tokens (or of the words, with whole-word masking), then
replace 80% of the chosen with [MASK], 10% with a random token and keep 10% as they are (the
BERT rule, also with whole words). Training batches are masked afresh each time; evaluation text
is masked once with a fixed seed, so perplexity before and after training is measured on exactly
the same positions."""

from __future__ import annotations

import functools

from bertkit.core.errors import BertkitError

IGNORE = -100  # label of positions that are not predicted


@functools.lru_cache(maxsize=8)
def _vocab_tables(tokenizer) -> tuple:
    """(continues-a-word flag per id, ids that random replacement may draw)."""
    import torch

    vocab = tokenizer.get_vocab()
    size = max(len(tokenizer), max(vocab.values()) + 1)
    special = set(tokenizer.all_special_ids)
    continues = torch.zeros(size, dtype=torch.bool)
    marked = sum(1 for t in vocab if t.startswith("##"))
    for token, index in vocab.items():
        if marked:  # WordPiece: '##' marks the inside of a word
            continues[index] = token.startswith("##")
        else:  # SentencePiece / byte-level BPE mark the start of a word instead
            continues[index] = not token.startswith(("▁", "Ġ")) and index not in special
    drawable = torch.tensor(sorted(set(vocab.values()) - special), dtype=torch.long)
    return continues, drawable


def mask_tokens(input_ids, special, tokenizer, probability: float, whole_words: bool, generator=None):
    """(masked inputs, labels) for a padded batch; `special` marks positions never chosen
    (special tokens and padding)."""
    import torch

    continues, drawable = _vocab_tables(tokenizer)
    inputs, labels = input_ids.clone(), input_ids.clone()
    candidates = ~special
    draw = torch.rand(inputs.shape, generator=generator)
    if whole_words:
        inside = continues[inputs] & candidates
        starts = candidates & ~inside
        chosen_start = starts & (draw < probability)
        # every token belongs to the word begun by the last start at or before it
        word = torch.cumsum(starts.long(), dim=1) - 1
        picked = torch.zeros(inputs.shape, dtype=torch.bool)
        rows, cols = chosen_start.nonzero(as_tuple=True)
        picked[rows, word[rows, cols]] = True
        masked = candidates & (word >= 0) & torch.gather(picked, 1, word.clamp(min=0))
    else:
        masked = candidates & (draw < probability)
    labels[~masked] = IGNORE
    how = torch.rand(inputs.shape, generator=generator)
    inputs[masked & (how < 0.8)] = tokenizer.mask_token_id
    random_slots = masked & (how >= 0.8) & (how < 0.9)
    picks = torch.randint(len(drawable), (int(random_slots.sum()),), generator=generator)
    inputs[random_slots] = drawable[picks]
    return inputs, labels


def special_positions(input_ids, tokenizer):
    import torch

    specials = torch.tensor(sorted(set(tokenizer.all_special_ids)), dtype=input_ids.dtype)
    return torch.isin(input_ids, specials)


class MaskingCollator:
    """Pads a batch; masks it unless its features already carry `labels` (fixed evaluation masks).
    A `next_sentence_label` (sentence pairs) is kept."""

    def __init__(self, tokenizer, probability: float = 0.15, whole_words: bool = False, pad_to_multiple_of=None):
        if tokenizer.mask_token_id is None:

            raise BertkitError(
                f"the tokenizer ({type(tokenizer).__name__}) has no [MASK] token: it cannot do masked LM"
            )
        self.tokenizer, self.probability, self.whole_words = tokenizer, probability, whole_words
        self.multiple = pad_to_multiple_of

    def __call__(self, features: list[dict]) -> dict:
        import torch

        fixed = "labels" in features[0]
        labels = [f["labels"] for f in features] if fixed else None
        names = [n for n in self.tokenizer.model_input_names if n in features[0]]
        batch = self.tokenizer.pad(
            [{n: f[n] for n in names} for f in features], return_tensors="pt", pad_to_multiple_of=self.multiple
        )
        if "next_sentence_label" in features[0]:  # sentence pairs (mlm.nsp)
            batch["next_sentence_label"] = torch.tensor([f["next_sentence_label"] for f in features])
        if fixed:
            width = batch["input_ids"].shape[1]
            batch["labels"] = torch.tensor([list(row) + [IGNORE] * (width - len(row)) for row in labels])
            return batch
        special = special_positions(batch["input_ids"], self.tokenizer)
        batch["input_ids"], batch["labels"] = mask_tokens(
            batch["input_ids"], special, self.tokenizer, self.probability, self.whole_words
        )
        return batch


def fixed_masks(features: dict, tokenizer, probability: float, whole_words: bool, seed: int) -> dict:
    """Mask tokenized `features` (lists of ids) once, reproducibly: masked input_ids and labels."""
    import torch

    generator = torch.Generator().manual_seed(seed)
    masked, labels = [], []
    for ids in features["input_ids"]:
        row = torch.tensor([ids])
        got, lab = mask_tokens(row, special_positions(row, tokenizer), tokenizer, probability, whole_words, generator)
        masked.append(got[0].tolist())
        labels.append(lab[0].tolist())
    return {**features, "input_ids": masked, "labels": labels}

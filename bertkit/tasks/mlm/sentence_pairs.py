"""Next-sentence prediction (`mlm.nsp: true`): BERT's second pre-training task, beside masked LM.

Examples are sentence pairs cut from documents, the way BERT's create_pretraining_data.py cuts
them (without its 10% of shorter examples). A document's sentences are gathered into a chunk
until the chunk reaches the target length (block_size less [CLS] and the two [SEP]) or the
document ends; a chunk of one sentence is skipped (it can still be a random B). Segment A is the
chunk's first 1..n-1 sentences (a random split); segment B is, with probability 0.5, the rest of
the chunk (label 0: B continues A), else sentences from a random place in another document, as
many as fill the target (label 1: B is random), and the chunk's unused sentences start the next
chunk. A pair longer than the target loses tokens from the longer segment: from A's start or B's
end, so the seam between them is kept. The input is [CLS] A [SEP] B [SEP], token type 0 up to the
first [SEP], 1 after it. Pairs are drawn once per run with train.seed; validation pairs (and
their masks) are fixed, so scores before and after training read the same pairs.

The labels follow BertForPreTraining: next_sentence_label 0 = "B continues A", 1 = "B is random".
"""

from __future__ import annotations

import random

from bertkit.core import models
from bertkit.core.data.corpus import load_corpus
from bertkit.core.errors import BertkitError
from bertkit.core.progress import console
from bertkit.tasks.mlm.settings import MlmConfig

NEXT, RANDOM = 0, 1  # next_sentence_label values


# ---------------------------------------------------------------- reading and checking


def read_documents(source, text_column: str):
    """A split as one row per document; at least two documents, or the random B has nowhere to
    come from."""

    ds = load_corpus(source, text_column, documents=True)
    if len(ds) < 2:
        sentences = len(ds["text"][0].splitlines())
        raise BertkitError(
            f"{source.describe()}: mlm.nsp needs several documents, and this data reads as one ({sentences:,} "
            "sentences with no blank line between them). Put one sentence a line and a blank line between "
            "documents (in JSON lines / CSV, one document a record, one sentence a line inside it), or turn "
            "mlm.nsp off"
        )
    return ds


def check_settings(cfg) -> None:
    """Settings that cannot go with mlm.nsp, refused before any work."""
    if cfg.section(MlmConfig).mode == "lines":
        raise BertkitError(
            "mlm.nsp builds its own examples (sentence pairs of up to mlm.block_size tokens): "
            "mlm.mode: lines does not apply; remove it (or turn mlm.nsp off)"
        )
    if cfg.data.strip_html:
        raise BertkitError(
            "data.strip_html joins a document's lines into one, which loses the sentences mlm.nsp pairs: "
            "strip HTML from the text first, or turn data.strip_html off"
        )
    if cfg.section(MlmConfig).from_scratch:
        return
    from transformers import AutoConfig


    source = models.resolve(cfg.model.name, cfg.model.revision)
    config = models.from_pretrained(AutoConfig, source, cfg.model.trust_remote_code, revision=cfg.model.revision)
    if config.model_type != "bert":
        raise BertkitError(
            f"mlm.nsp needs a BERT with a next-sentence head, and {cfg.model.name} is a '{config.model_type}' "
            "model (RoBERTa, DistilBERT and most others have none): use a BERT, set mlm.from_scratch: true, "
            "or turn mlm.nsp off"
        )


def check_tokenizer(tokenizer) -> None:
    if tokenizer.cls_token_id is None or tokenizer.sep_token_id is None:
        raise BertkitError(
            f"mlm.nsp needs [CLS] and [SEP] tokens, and this tokenizer ({type(tokenizer).__name__}) lacks one"
        )


# ---------------------------------------------------------------- pairs


def build_pairs(documents: list[list[list[int]]], max_tokens: int, seed: int) -> list[tuple[list, list, int]]:
    """(A ids, B ids, label) pairs from documents given as lists of sentences (token ids, none
    empty), with len(A) + len(B) <= max_tokens; see the module's docstring."""
    rng = random.Random(seed)
    pairs = []
    for d, doc in enumerate(documents):
        chunk: list[list[int]] = []
        length, i = 0, 0
        while i < len(doc):
            chunk.append(doc[i])
            length += len(doc[i])
            if i == len(doc) - 1 or length >= max_tokens:
                if len(chunk) >= 2:
                    a_end = rng.randint(1, len(chunk) - 1)
                    a = [t for sentence in chunk[:a_end] for t in sentence]
                    if len(documents) > 1 and rng.random() < 0.5:
                        b = _random_span(documents, d, max_tokens - len(a), rng)
                        label = RANDOM
                        i -= len(chunk) - a_end  # the sentences not used start the next chunk
                    else:
                        b = [t for sentence in chunk[a_end:] for t in sentence]
                        label = NEXT
                    pairs.append((*truncate(a, b, max_tokens), label))
                chunk, length = [], 0
            i += 1
    return pairs


def _random_span(documents: list, current: int, target: int, rng: random.Random) -> list[int]:
    """Consecutive sentences from a random place in a document other than `current`: at least one,
    then more until `target` tokens are reached or the document ends."""
    other = rng.randrange(len(documents) - 1)
    other += other >= current
    doc = documents[other]
    span: list[int] = []
    for sentence in doc[rng.randrange(len(doc)) :]:
        span += sentence
        if len(span) >= target:
            break
    return span


def truncate(a: list[int], b: list[int], max_tokens: int) -> tuple[list[int], list[int]]:
    """Cut the longer segment until both fit: A from its start, B from its end."""
    while len(a) + len(b) > max_tokens:
        if len(a) > len(b):
            a = a[1:]
        else:
            b = b[:-1]
    return a, b


def pair_examples(tokenizer, texts: list[str], info: dict, where: str) -> list[dict]:
    """Model inputs for next-sentence prediction from documents (sentences one a line)."""
    documents = []
    for text in texts:
        sentences = [s for s in text.split("\n") if s.strip()]
        ids = tokenizer(sentences, add_special_tokens=False)["input_ids"] if sentences else []
        documents.append([piece for piece in ids if piece])
    documents = [doc for doc in documents if doc]
    if len(documents) < 2:
        raise BertkitError(
            f"{where} data: {len(documents)} document(s); mlm.nsp needs at least two to draw random sentences "
            "from. Add documents, or give data.validation"
        )
    pairs = build_pairs(documents, info["block_size"] - 3, info["seed"])
    if not pairs:
        raise BertkitError(
            f"{where} data: no document has two sentences, so there is no next sentence to learn: put one "
            "sentence a line, with a blank line only between documents"
        )
    cls, sep = tokenizer.cls_token_id, tokenizer.sep_token_id
    rows = []
    for a, b, label in pairs:
        ids = [cls, *a, sep, *b, sep]
        rows.append(
            {
                "input_ids": ids,
                "attention_mask": [1] * len(ids),
                "token_type_ids": [0] * (len(a) + 2) + [1] * (len(b) + 1),
                "next_sentence_label": label,
            }
        )
    return rows


# ---------------------------------------------------------------- the model


def build_model(source: str | None, info: dict, cfg, bert_config):
    """A BertForPreTraining: new (`bert_config`) from scratch, else the checkpoint's, with a new
    head (said in the log) where the checkpoint has none."""
    from transformers import AutoModelForPreTraining, BertForPreTraining


    if source is None:
        return BertForPreTraining(bert_config)
    model, loading = models.load_weights(AutoModelForPreTraining, source, cfg, output_loading_info=True)
    if type(model).__name__ != "BertForPreTraining":
        raise BertkitError(
            f"mlm.nsp needs a BERT with a next-sentence head, and {cfg.model.name} loads as {type(model).__name__}: "
            "use a BERT, set mlm.from_scratch: true, or turn mlm.nsp off"
        )
    missing = loading.get("missing_keys", [])
    for prefix, what in (("cls.predictions.", "masked-LM"), ("cls.seq_relationship.", "next-sentence")):
        if any(key.startswith(prefix) for key in missing):
            console.print(f"[yellow]note:[/yellow] {cfg.model.name} has no {what} head; a new one is trained")
    return model


# ---------------------------------------------------------------- scores


def nsp_accuracy(logits, labels) -> float:
    import numpy as np

    logits, labels = np.asarray(logits), np.asarray(labels).reshape(-1)
    return float((logits.argmax(-1) == labels).mean()) if labels.size else float("nan")

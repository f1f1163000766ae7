"""The mlm task: the contract's methods (bertkit/tasks/base.py), over the package's helpers."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING

import numpy as np

from bertkit.core import data as data_mod
from bertkit.core import models, tokenization
from bertkit.core.data.corpus import load_corpus
from bertkit.core.data.records import place_of, text_value
from bertkit.core.errors import BertkitError, RecordError
from bertkit.core.inference import chunks, empty_record, forward, softmax, to_numpy
from bertkit.core.progress import console, status
from bertkit.core.run_info import RunInfo
from bertkit.core.tokenizer_training import train_wordpiece
from bertkit.tasks.base import Task, pad_multiple, require_field
from bertkit.tasks.inspecting import View
from bertkit.tasks.mlm import sentence_pairs, streaming
from bertkit.tasks.mlm.masked_positions import predict_masked_only
from bertkit.tasks.mlm.masking import MaskingCollator, fixed_masks
from bertkit.tasks.mlm.scoring import losses_of_rows, mask_like, score, score_rows, token_losses
from bertkit.tasks.options import EvaluateOptions, PredictOptions

if TYPE_CHECKING:
    from bertkit.config import Config


class MlmTask(Task):
    name = "mlm-adapt"
    auto_model = "AutoModelForMaskedLM"
    onnx_per_token = True  # the vocabulary's logits at each token
    explain_refusal = "a masked-LM model fills masks and has no label to explain"
    records_per_pass = 256

    # ------------------------------------------------------------ data

    can_stream = True

    def load(self, cfg: Config):
        column = cfg.data.text_column
        if cfg.data.streaming:
            return streaming.load(cfg)
        if cfg.mlm.nsp:  # one row per document
            return data_mod.load_splits(cfg, read=lambda source, role: sentence_pairs.read_documents(source, column))
        return data_mod.load_splits(cfg, read=lambda source, role: load_corpus(source, column))

    def setup(self, ds, cfg: Config) -> dict:
        m = cfg.mlm
        block = m.block_size or cfg.model.max_length
        if block > cfg.model.max_length:
            raise BertkitError(
                f"mlm.block_size {block} is longer than model.max_length {cfg.model.max_length}; lower it"
            )
        if m.nsp:
            sentence_pairs.check_settings(cfg)
        return {
            "task": self.name,
            "mode": m.mode,
            "block_size": block,
            "max_length": cfg.model.max_length,
            "long_lines": m.long_lines,
            "mlm_probability": m.mlm_probability,
            "whole_word_masking": m.whole_word_masking,
            "top_k": m.top_k,
            "seed": cfg.train.seed,
            "text_column": cfg.data.text_column,  # as the data names it: evaluate and predict read the same field
            **({"base_model": "scratch", "from_scratch": True} if m.from_scratch else {}),
            **({"nsp": True} if m.nsp else {}),
        }

    def starts_from_scratch(self, cfg: Config) -> bool:
        return cfg.mlm.from_scratch

    def new_tokenizer(self, ds, cfg: Config):
        """From scratch without a given tokenizer: a WordPiece vocabulary learnt on the training text."""
        if not cfg.mlm.from_scratch or cfg.model.tokenizer:
            return None

        with status(f"learning a {cfg.mlm.vocab_size:,}-entry WordPiece vocabulary"):
            return train_wordpiece(
                ds["train"]["text"],
                cfg.mlm.vocab_size,
                lowercase=cfg.mlm.lowercase,
                max_length=cfg.model.max_length,
                japanese=cfg.mlm.japanese,
                where=f"{cfg.data.train.describe()} (training data)",
            )

    def tokenizer_facts(self, tokenizer, info) -> dict:
        if tokenizer.mask_token_id is None:
            raise BertkitError(
                f"the tokenizer ({type(tokenizer).__name__}) has no [MASK] token: it cannot do masked LM"
            )
        if info.get("nsp"):
            sentence_pairs.check_tokenizer(tokenizer)
        return {"vocab_size": len(tokenizer), "pad_token_id": tokenizer.pad_token_id}

    def prepare(self, ds, tokenizer, info: dict):
        import datasets

        prepared = {}
        for role, split in ds.items():
            if isinstance(split, datasets.IterableDataset):  # data.streaming: tokenized as training reads it
                prepared[role] = streaming.features(split, tokenizer, info, examples)
                continue
            make = sentence_pairs.pair_examples if info.get("nsp") else examples
            rows = make(tokenizer, list(split["text"]), info, role)
            columns = {key: [row[key] for row in rows] for key in rows[0]}
            if role != "train":
                columns = fixed_masks(
                    columns, tokenizer, info["mlm_probability"], info["whole_word_masking"], info["seed"]
                )
            prepared[role] = datasets.Dataset.from_dict(columns)
        return prepared

    # ------------------------------------------------------------ model and training

    def build_model(self, source: str | None, info: dict, cfg: Config):
        from transformers import AutoModelForMaskedLM, BertConfig, BertForMaskedLM

        config = None
        if source is None:
            m = cfg.mlm
            config = BertConfig(
                vocab_size=info["vocab_size"],
                hidden_size=m.hidden_size,
                num_hidden_layers=m.num_layers,
                num_attention_heads=m.num_heads,
                intermediate_size=m.intermediate_size,
                max_position_embeddings=cfg.model.max_length,
                pad_token_id=info["pad_token_id"],
                initializer_range=m.initializer_range,
                hidden_dropout_prob=m.dropout,
                attention_probs_dropout_prob=m.dropout,
            )
        if info.get("nsp"):  # BertForPreTraining: masked LM + next-sentence prediction
            model = sentence_pairs.build_model(source, info, cfg, config)
        elif source is None:
            return _masked_only(BertForMaskedLM(config))
        else:
            model, loading = models.load_weights(AutoModelForMaskedLM, source, cfg, output_loading_info=True)
            prefix = model.base_model_prefix + "."
            if any(not key.startswith(prefix) for key in loading.get("missing_keys", [])):
                console.print(f"[yellow]note:[/yellow] {cfg.model.name} has no masked-LM head; a new one is trained")
        if model.get_input_embeddings().num_embeddings < info["vocab_size"]:
            model.resize_token_embeddings(info["vocab_size"])
        return _masked_only(model)

    def export(self, model, info: dict):
        """The model as saved: one pre-trained from scratch gets BERT's fine-tuning dropout back
        (mlm.dropout applies to pre-training only)."""
        if info.get("from_scratch"):
            model.config.hidden_dropout_prob = model.config.attention_probs_dropout_prob = FINE_TUNING_DROPOUT
        return model

    def collator(self, tokenizer, cfg: Config):
        return MaskingCollator(tokenizer, cfg.mlm.mlm_probability, cfg.mlm.whole_word_masking, pad_multiple(cfg))

    def best_metric(self, info: dict) -> str:
        return "perplexity"

    def metric_names(self, info: dict) -> list[str]:
        return ["loss", "perplexity", "accuracy", *(["nsp_accuracy"] if info.get("nsp") else [])]

    @staticmethod
    def reduce_logits(logits, labels):
        """Per position: (loss of the true token, 1 if it ranked first); the Trainer keeps these
        instead of the full vocabulary logits. A BertForPreTraining (mlm.nsp) gives (masked-LM,
        next-sentence) logits and labels: its next-sentence logits are kept as they are."""
        if isinstance(logits, tuple | list):
            return token_losses(logits[0], labels[0]), logits[1].float()
        return token_losses(logits, labels)

    def metric_fn(self, info: dict, features, examples):
        return lambda prediction: score(prediction.predictions, prediction.label_ids)

    scores_before_training = True

    def compare(self, before: dict, after: dict) -> dict:
        """Validation perplexity (and next-sentence accuracy) before and after: the point of the job."""
        headline = {"perplexity_before": before["perplexity"], "perplexity_after": after["perplexity"]}
        if "nsp_accuracy" in before:
            headline |= {"nsp_accuracy_before": before["nsp_accuracy"], "nsp_accuracy_after": after["nsp_accuracy"]}
        return headline

    # ------------------------------------------------------------ inspecting the data

    def inspect_view(self, split, cfg: Config, info: RunInfo):

        return View(list(split["text"]))

    # ------------------------------------------------------------ inference

    def evaluate(self, model, tokenizer, info: RunInfo, data: str, options: EvaluateOptions) -> dict:
        """Perplexity of `model` on a text file, masked the way the bundle was validated."""
        source = options.source(data)
        texts = options.sampled(list(load_corpus(source, options.text_field(info))["text"]))
        info = _complete(info, model)
        rows = examples(tokenizer, texts, info, data)
        columns = {key: [row[key] for row in rows] for key in rows[0]}
        masked = fixed_masks(columns, tokenizer, info["mlm_probability"], info["whole_word_masking"], info["seed"])
        features = [dict(zip(masked, values, strict=True)) for values in zip(*masked.values(), strict=True)]
        losses = forward(model, tokenizer, features, options.batch_size, output=losses_of_rows)
        return {**score_rows(losses), "texts": len(texts)}

    def check_record(self, record, tokenizer, info: RunInfo, options: PredictOptions, where: str, seen: dict) -> None:
        """A text holding the mask token (a tokenizer without one: `predict` says so itself)."""
        column = options.text_field(info)
        require_field(record, column, where)
        text = text_value(record[column], where, column)
        if tokenizer.mask_token is not None and tokenizer.mask_token not in text:
            raise RecordError(_no_mask(where, text, tokenizer.mask_token), column)

    def empty_result(self, model, record: dict, info: RunInfo, options: PredictOptions) -> dict:
        column = options.text_field(info)
        return empty_record(record, column, masks=[], filled=record.get(column))

    def predict(
        self, model, tokenizer, info: RunInfo, records: Iterable[dict], options: PredictOptions
    ) -> Iterator[dict]:
        """Fill-mask: for each [MASK] of each text, the top-k tokens and their probabilities."""
        info = _complete(info, model)
        column = options.text_field(info)
        top_k = options.top_k or info.get("top_k", 5)
        mask = tokenizer.mask_token
        if mask is None:
            raise BertkitError("this model's tokenizer has no mask token: it cannot fill in masks")
        number = 0
        for chunk in chunks(records, self.records_per_pass):
            features = []
            for record in chunk:
                number += 1
                text = _text(record, column, number)
                if mask not in text:
                    raise RecordError(_no_mask(place_of(record, number), text, mask), column)
                encoded = tokenizer(text, truncation=True, max_length=info["max_length"])
                if encoded["input_ids"].count(tokenizer.mask_token_id) < text.count(mask):
                    raise BertkitError(
                        f"{place_of(record, number)}: a {mask} lies past the model's {info['max_length']}-token limit; "
                        "shorten the text around it"
                    )
                features.append(dict(encoded))
            results = forward(model, tokenizer, features, options.batch_size, output=_top_k(tokenizer, top_k))
            for record, found in zip(chunk, results, strict=True):
                yield _describe(record, column, found, tokenizer)

    def card_summary(self, info: dict) -> str:
        masking = "whole-word masking" if info.get("whole_word_masking") else "token masking"
        if info.get("nsp"):
            return f"masked LM + next-sentence prediction, pairs of up to {info.get('block_size')} tokens, {masking}"
        return f"masked LM, {info.get('mode')} of {info.get('block_size')} tokens, {masking}"

    def cli_usage(self, where: str) -> str:
        return f"bertkit predict --model {where} --input masked.txt --output predictions.jsonl"


TASK = MlmTask()
FINE_TUNING_DROPOUT = 0.1  # BERT's, for a model pre-trained here


# ---------------------------------------------------------------- examples


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


def _top_k(tokenizer, k: int):
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


def _describe(record: dict, column: str, found, tokenizer) -> dict:
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


def _text(record: dict, column: str, number: int) -> str:
    require_field(record, column, place_of(record, number))
    return text_value(record[column], place_of(record, number), column)


def _no_mask(where: str, text: str, mask: str) -> str:
    return f"{where}: no {mask} in {text[:80]!r}; mark the word to guess with {mask}"


def _masked_only(model):
    """Training scores only the masked positions against the vocabulary (same loss, about half
    the time of a step for a small model); see bertkit.tasks.mlm.masked_positions."""

    predict_masked_only(model)
    return model


def _complete(info: dict, model) -> dict:
    """A bundle's settings, with defaults for a plain Hugging Face masked-LM model."""
    limit = min(int(getattr(model.config, "max_position_embeddings", 512)), 512)
    defaults = {"max_length": limit, "block_size": limit, "mode": "lines", "long_lines": "truncate"}
    return {**defaults, "mlm_probability": 0.15, "whole_word_masking": False, "seed": 42, "top_k": 5, **info}

"""How mlm-adapt trains: text cut into blocks or lines, tokens masked as the config says (whole
words, probability), a new vocabulary and model when pre-training from scratch, perplexity before
and after."""

from __future__ import annotations

from typing import TYPE_CHECKING

from bertkit.core import data as data_mod
from bertkit.core import models
from bertkit.core.data.corpus import load_corpus
from bertkit.core.errors import BertkitError
from bertkit.core.progress import console, status
from bertkit.core.tokenizer_training import train_wordpiece
from bertkit.tasks.contract import Training, pad_multiple
from bertkit.tasks.mlm import sentence_pairs, streaming
from bertkit.tasks.mlm.inputs import FINE_TUNING_DROPOUT, examples, masked_only
from bertkit.tasks.mlm.masking import MaskingCollator, fixed_masks
from bertkit.tasks.mlm.scoring import score, token_losses
from bertkit.tasks.mlm.settings import MlmConfig

if TYPE_CHECKING:
    from bertkit.core.run_config import RunConfig


class MlmTraining(Training):
    can_stream = True

    def load(self, cfg: RunConfig):
        column = cfg.data.text_column
        if cfg.data.streaming:
            return streaming.load(cfg)
        if cfg.section(MlmConfig).nsp:  # one row per document
            return data_mod.load_splits(cfg, read=lambda source, role: sentence_pairs.read_documents(source, column))
        return data_mod.load_splits(cfg, read=lambda source, role: load_corpus(source, column))

    def setup(self, ds, cfg: RunConfig) -> dict:
        m = cfg.section(MlmConfig)
        block = m.block_size or cfg.model.max_length
        if block > cfg.model.max_length:
            raise BertkitError(
                f"mlm.block_size {block} is longer than model.max_length {cfg.model.max_length}; lower it"
            )
        if m.nsp:
            sentence_pairs.check_settings(cfg)
        return {
            "task": "mlm-adapt",
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

    def starts_from_scratch(self, cfg: RunConfig) -> bool:
        return cfg.section(MlmConfig).from_scratch

    def new_tokenizer(self, ds, cfg: RunConfig):
        """From scratch without a given tokenizer: a WordPiece vocabulary learnt on the training text."""
        if not cfg.section(MlmConfig).from_scratch or cfg.model.tokenizer:
            return None

        with status(f"learning a {cfg.section(MlmConfig).vocab_size:,}-entry WordPiece vocabulary"):
            return train_wordpiece(
                ds["train"]["text"],
                cfg.section(MlmConfig).vocab_size,
                lowercase=cfg.section(MlmConfig).lowercase,
                max_length=cfg.model.max_length,
                japanese=cfg.section(MlmConfig).japanese,
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

    def build_model(self, source: str | None, info: dict, cfg: RunConfig):
        from transformers import AutoModelForMaskedLM, BertConfig, BertForMaskedLM

        config = None
        if source is None:
            m = cfg.section(MlmConfig)
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
            return masked_only(BertForMaskedLM(config))
        else:
            model, loading = models.load_weights(AutoModelForMaskedLM, source, cfg, output_loading_info=True)
            prefix = model.base_model_prefix + "."
            if any(not key.startswith(prefix) for key in loading.get("missing_keys", [])):
                console.print(f"[yellow]note:[/yellow] {cfg.model.name} has no masked-LM head; a new one is trained")
        if model.get_input_embeddings().num_embeddings < info["vocab_size"]:
            model.resize_token_embeddings(info["vocab_size"])
        return masked_only(model)

    def saved_model(self, model, info: dict):
        """The model as saved: one pre-trained from scratch gets BERT's fine-tuning dropout back
        (mlm.dropout applies to pre-training only)."""
        if info.get("from_scratch"):
            model.config.hidden_dropout_prob = model.config.attention_probs_dropout_prob = FINE_TUNING_DROPOUT
        return model

    def collator(self, tokenizer, cfg: RunConfig):
        settings = cfg.section(MlmConfig)
        return MaskingCollator(tokenizer, settings.mlm_probability, settings.whole_word_masking, pad_multiple(cfg))

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

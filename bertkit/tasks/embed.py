"""Sentence-embedding training: contrastive fine-tuning of an encoder on text pairs.

(anchor, positive) pairs train with in-batch negatives: every other positive in the batch is a
negative (copies of the same positive text are not). Scored pairs (e.g. STS 0-5) train with a
CoSENT or cosine-regression loss. Validation is Spearman correlation on scored pairs, and
retrieval recall@k / MRR on plain pairs (each anchor against every distinct positive). The bundle
is the bare encoder with its pooling recorded, which `bertkit embed` uses.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

import numpy as np

from bertkit import data as data_mod
from bertkit import metrics, models
from bertkit.config import Config, DataSource, load_config
from bertkit.embeddings.encoder import Encoder, Settings
from bertkit.embeddings.pooling import l2_normalize, pool, unit_rows
from bertkit.errors import BertkitError
from bertkit.inference import chunks, empty_record
from bertkit.run_info import RunInfo
from bertkit.tasks.base import Task, pad_multiple
from bertkit.tasks.options import EvaluateOptions, PredictOptions

PAIR = "pair_"  # prefix of the second text's model inputs


class EmbedTask(Task):
    name = "embed"
    auto_model = "AutoModel"

    # ------------------------------------------------------------ data

    def load(self, cfg: Config):
        if not cfg.data.text_pair_column:
            raise BertkitError(
                "embed training needs pairs: set data.text_pair_column to the column of the second text "
                "(the positive, or the other sentence of a scored pair)"
            )
        columns = {"text_column": cfg.data.text_column, "text_pair_column": cfg.data.text_pair_column}

        def read(source, role):
            ds = data_mod.load_source(source, cfg)
            data_mod.require_columns(ds, columns, f"{source.describe()} ({role} data)")
            return ds

        return data_mod.load_splits(cfg, read=read)

    def setup(self, ds, cfg: Config) -> dict:
        e, d = cfg.embed, cfg.data
        scored = d.label_column in ds["train"].column_names
        loss = e.loss if e.loss != "auto" else ("cosent" if scored else "in_batch")
        if loss != "in_batch" and not scored:
            raise BertkitError(
                f"embed.loss {loss} needs a score for each pair: the training data has no '{d.label_column}' column "
                "(set data.label_column), or use embed.loss: in_batch"
            )
        score_max = None
        if scored:
            values = scores_of(ds["train"][d.label_column], data_mod.places(ds["train"], "train"))
            score_max = e.score_max or float(max(values))
            if score_max <= 0:
                raise BertkitError(f"the '{d.label_column}' scores are all 0 or below; set embed.score_max")
        return {
            "task": self.name,
            "pooling": e.pooling,
            "normalize": e.normalize,
            "max_length": cfg.model.max_length,
            "pair_max_length": e.pair_max_length or cfg.model.max_length,
            "scored": scored,
            "loss": loss,
            "scale": e.scale,
            "score_max": score_max,
            "text_column": d.text_column,
            "text_pair_column": d.text_pair_column,
            "label_column": d.label_column if scored else None,
        }

    def prepare(self, ds, tokenizer, info: dict):
        import datasets

        prepared = {}
        for role, split in ds.items():
            prepared[role] = datasets.Dataset.from_dict(pair_features(tokenizer, split, info, role))
        return datasets.DatasetDict(prepared)

    # ------------------------------------------------------------ model and training

    def build_model(self, source: str, info: dict, cfg: Config):
        from transformers import AutoModel

        encoder = models.load_weights(AutoModel, source, cfg)
        return pair_encoder_class()(encoder, info["pooling"], info["loss"], info["scale"])

    def collator(self, tokenizer, cfg: Config):
        return PairCollator(tokenizer, pad_multiple(cfg))

    def export(self, model, info: dict):
        return model.encoder

    def best_metric(self, info: dict) -> str:
        return "spearman" if info["scored"] else "mrr"

    def metric_names(self, info: dict) -> list[str]:
        if info["scored"]:
            return ["mse", "rmse", "mae", "pearson", "spearman"]
        return ["recall_at_1", "recall_at_5", "recall_at_10", "mrr"]

    scores_before_training = True

    def compare(self, before: dict, after: dict) -> dict:
        """The starting model's numbers next to the trained one's: what the training bought."""
        names = ("spearman",) if "spearman" in after else ("recall_at_1", "recall_at_5", "mrr")
        return {f"{n}_{when}": scores[n] for n in names for when, scores in (("before", before), ("after", after))}

    def metric_fn(self, info: dict, features, examples):
        groups = list(features["pair_group"])

        def scorer(prediction):
            first, second = prediction.predictions[:2]
            return pair_metrics(first, second, prediction.label_ids, groups, info["scored"])

        return scorer

    # ------------------------------------------------------------ inference

    def evaluate(self, model, tokenizer, info: RunInfo, data: str, options: EvaluateOptions) -> dict:
        """The validation metrics of an embed bundle on a pairs file."""
        cfg = load_config(None, task=self.name)
        info = {**info, **options.columns()}
        cfg.data.text_column = info["text_column"]
        ds = data_mod.load_source(DataSource(path=data, format=options.data_format), cfg)
        data_mod.require_columns(
            ds, {"text_column": info["text_column"], "text_pair_column": info["text_pair_column"]}, data
        )
        encoder = _encoder(model, tokenizer, info)
        batch = options.batch_size
        first = encoder.encode([_text(t) for t in ds[info["text_column"]]], batch)
        second = encoder.encode([_text(t) for t in ds[info["text_pair_column"]]], batch)
        scored = bool(info.get("scored"))
        if scored:
            data_mod.require_columns(ds, {"label_column": info["label_column"]}, data)
        places = data_mod.places(ds, data)
        labels = np.asarray(scores_of(ds[info["label_column"]], places)) / info["score_max"] if scored else None
        groups = group_ids([_text(t) for t in ds[info["text_pair_column"]]])
        return pair_metrics(first, second, labels, groups, scored)

    def empty_result(self, model, record: dict, info: RunInfo, options: PredictOptions) -> dict:
        """An empty text's vector is all zeros (its cosine with anything is 0)."""
        column = options.text_field(info)
        return empty_record(record, column, embedding=[0.0] * int(model.config.hidden_size))

    def predict(
        self, model, tokenizer, info: RunInfo, records: Iterable[dict], options: PredictOptions
    ) -> Iterator[dict]:
        """The sentence vector of each text (for files of vectors, `bertkit embed` is the tool)."""
        encoder = _encoder(model, tokenizer, info)
        column = options.text_field(info)
        for chunk in chunks(records, self.records_per_pass):
            vectors = encoder.encode([_text(r.get(column)) for r in chunk], options.batch_size)
            for record, vector in zip(chunk, vectors, strict=True):
                out = {k: record[k] for k in ("id",) if k in record}
                yield {**out, "text": record.get(column), "embedding": [round(float(x), 7) for x in vector]}

    def card_summary(self, info: dict) -> str:
        norm = ", L2-normalised" if info.get("normalize") else ""
        return f"sentence embeddings: {info.get('pooling')} pooling{norm}, {info.get('loss')} loss"

    def cli_usage(self, where: str) -> str:
        return f"bertkit embed --model {where} --input texts.txt --output vectors.npy"

    def python_usage(self, where: str) -> list[str]:
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


TASK = EmbedTask()


# ---------------------------------------------------------------- features


def pair_features(tokenizer, split, info: dict, role: str) -> dict:
    first = tokenizer([_text(t) for t in split[info["text_column"]]], truncation=True, max_length=info["max_length"])
    seconds = [_text(t) for t in split[info["text_pair_column"]]]
    second = tokenizer(seconds, truncation=True, max_length=info["pair_max_length"])
    columns = {**dict(first), **{PAIR + k: v for k, v in second.items()}}
    if info["scored"]:
        places = data_mod.places(split, role)
        columns["labels"] = [s / info["score_max"] for s in scores_of(split[info["label_column"]], places)]
    else:
        columns["labels"] = [1.0] * len(seconds)
    columns["pair_group"] = group_ids(seconds)
    return columns


def group_ids(texts: list[str]) -> list[int]:
    """The same number for equal texts (in order of first appearance)."""
    seen: dict[str, int] = {}
    return [seen.setdefault(t, len(seen)) for t in texts]


def scores_of(values, where: str | list[str]) -> list[float]:
    return data_mod.as_numbers(values, where, "score")


def _text(value) -> str:
    return "" if value is None else str(value)


class PairCollator:
    """Pads each side of a batch of pairs on its own; scores and pair groups become tensors."""

    def __init__(self, tokenizer, pad_to_multiple_of=None):
        self.tokenizer, self.multiple = tokenizer, pad_to_multiple_of

    def __call__(self, features: list[dict]) -> dict:
        import torch

        names = [n for n in self.tokenizer.model_input_names if n in features[0]]
        batch = dict(self._pad([{n: f[n] for n in names} for f in features]))
        second = self._pad([{n: f[PAIR + n] for n in names} for f in features])
        batch.update({PAIR + k: v for k, v in second.items()})
        batch["labels"] = torch.tensor([float(f["labels"]) for f in features])
        if "pair_group" in features[0]:
            batch["pair_group"] = torch.tensor([int(f["pair_group"]) for f in features])
        return batch

    def _pad(self, rows: list[dict]):
        return self.tokenizer.pad(rows, return_tensors="pt", pad_to_multiple_of=self.multiple)


def pair_encoder_class():
    """The training module (built on first use, so importing this file needs no torch)."""
    import torch

    class PairEncoder(torch.nn.Module):
        """Encodes both texts of each pair with one shared encoder and returns (loss, first
        vectors, second vectors); the encoder alone is what the bundle keeps."""

        base_model_prefix = "encoder"

        def __init__(self, encoder, pooling: str, loss: str, scale: float):
            super().__init__()
            self.encoder, self.pooling, self.loss_name, self.scale = encoder, pooling, loss, scale
            self.config = encoder.config

        def embed(self, input_ids, attention_mask, token_type_ids=None):
            extra = {"token_type_ids": token_type_ids} if token_type_ids is not None else {}
            out = self.encoder(input_ids=input_ids, attention_mask=attention_mask, **extra)
            return pool(out, attention_mask, self.pooling)

        def gradient_checkpointing_enable(self, **kwargs):
            self.encoder.gradient_checkpointing_enable(**kwargs)

        def forward(
            self,
            input_ids,
            attention_mask,
            pair_input_ids,
            pair_attention_mask,
            token_type_ids=None,
            pair_token_type_ids=None,
            labels=None,
            pair_group=None,
        ):
            first = self.embed(input_ids, attention_mask, token_type_ids)
            second = self.embed(pair_input_ids, pair_attention_mask, pair_token_type_ids)
            loss = pair_loss(self.loss_name, first, second, labels, pair_group, self.scale)
            return (loss, first, second)

    return PairEncoder


def pair_loss(name: str, first, second, labels, groups, scale: float):
    import torch

    if name == "in_batch":
        return in_batch_loss(first, second, groups, scale)
    cosine = (l2_normalize(first) * l2_normalize(second)).sum(-1)
    if name == "cosine":
        return torch.nn.functional.mse_loss(cosine, labels.to(cosine.dtype))
    return cosent_loss(cosine, labels, scale)


def in_batch_loss(first, second, groups, scale: float):
    """Cross-entropy of each anchor's own positive against every other positive in the batch;
    other copies of the same positive text are left out rather than counted as negatives."""
    import torch

    logits = scale * (l2_normalize(first) @ l2_normalize(second).T)
    if groups is not None:
        same = groups[:, None] == groups[None, :]
        same.fill_diagonal_(False)
        logits = logits.masked_fill(same, float("-inf"))
    return torch.nn.functional.cross_entropy(logits, torch.arange(len(first), device=first.device))


def cosent_loss(cosine, labels, scale: float):
    """CoSENT: every pair scored higher than another should have the higher cosine;
    log(1 + sum over such (i, j) of exp(scale * (cos_j - cos_i)))."""
    import torch

    diff = scale * (cosine[None, :] - cosine[:, None])  # [i, j] = cos_j - cos_i
    wanted = labels[:, None] > labels[None, :]
    diff = diff.masked_fill(~wanted, float("-inf"))
    zero = torch.zeros(1, device=cosine.device, dtype=diff.dtype)
    return torch.logsumexp(torch.cat([zero, diff.reshape(-1)]), dim=0)


# ---------------------------------------------------------------- scoring


def pair_metrics(first, second, labels, groups: list[int], scored: bool) -> dict:
    """Spearman / Pearson of cosine against the scores, or retrieval of each anchor's positive
    among all distinct positives."""
    first, second = unit_rows(np.asarray(first, dtype=np.float32)), unit_rows(np.asarray(second, dtype=np.float32))
    if scored:
        cosine = (first * second).sum(axis=1)
        return metrics.load("regression").compute(predictions=cosine, references=np.asarray(labels, dtype=float))
    groups = np.asarray(groups)
    keys, where = np.unique(groups, return_index=True)
    corpus = second[where]  # one vector per distinct positive, in key order
    target = np.searchsorted(keys, groups)
    scores = first @ corpus.T
    own = scores[np.arange(len(first)), target]
    ranks = 1 + (scores > own[:, None]).sum(axis=1)
    return metrics.load("retrieval").compute(ranks=ranks)


def _encoder(model, tokenizer, info: dict) -> Encoder:
    settings = Settings(info.get("pooling", "mean"), bool(info.get("normalize")), info.get("max_length", 512), "bundle")
    return Encoder(model, tokenizer, settings, "bundle", "")

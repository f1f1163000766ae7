"""Sentence embeddings from any BERT-family encoder: pooling of token vectors, the settings a
model comes with (a bertkit embed bundle, a sentence-transformers folder, or defaults), and
batched, length-sorted encoding in input order. Shared by `bertkit embed`, `similarity`,
`search` and the embed task's training and evaluation."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from bertkit.core import hub, models, onnx_runtime
from bertkit.core.adapters.loading import load_weights
from bertkit.core.errors import BertkitError
from bertkit.core.inference import forward, in_precision, pick_device, precision_for
from bertkit.core.models import position_limit
from bertkit.core.onnx_runtime import choose_runtime
from bertkit.core.pooling import POOLINGS, l2_normalize, pool
from bertkit.core.progress import console
from bertkit.core.run_info import positive_int, read_json, read_object
from bertkit.core.tokenization import load_tokenizer
from bertkit.tasks.bundle import check_unchanged, directory_identity, read_info, refuse_half_onnx


@dataclass
class Settings:
    pooling: str = "mean"
    normalize: bool = False
    max_length: int = 512
    origin: str = "defaults"


def model_settings(path: str, config, pooling_needed: bool = True) -> Settings:
    """What a model folder says about making sentence vectors: bertkit.json of an embed bundle,
    or the sentence-transformers files (pooling mode, Normalize module, max_seq_length). Each
    file is checked as it is read, so a damaged one is an error naming it; the pooling the files
    give is checked only when it is used (`pooling_needed`: no --pooling was given)."""

    root = Path(path)
    limit = _limit(config)
    settings = Settings(max_length=limit)
    info = read_info(root, pooling_needed)
    if info is not None:
        settings.max_length = min(info.get("max_length") or limit, limit)
        if info["task"] == "embed":
            settings.pooling = info.get("pooling") or settings.pooling
            settings.normalize = bool(info.get("normalize"))
            settings.origin = "bertkit.json"
        return settings
    restore = "restore it from the original model"
    modules_file = root / "modules.json"
    if modules_file.is_file():
        modules = read_json(modules_file, restore)
        if not isinstance(modules, list) or not all(isinstance(m, dict) for m in modules):
            raise BertkitError(
                f"{modules_file} must be a list of modules (objects with 'type' and 'path'), as "
                f"sentence-transformers writes it; {restore}"
            )
        if not all(isinstance(m.get(key, ""), str) for m in modules for key in ("type", "path")):
            raise BertkitError(f"{modules_file}: each module's 'type' and 'path' must be text; {restore}")
        settings.normalize = any(m.get("type", "").endswith("Normalize") for m in modules)
        if any(m.get("type", "").endswith("Dense") for m in modules):

            console.print(
                f"note: {modules_file} lists a Dense module (a projection after the pooling), which bertkit does not "
                "apply: its vectors are the pooled ones, not those sentence-transformers gives"
            )
        for module in modules:
            pooling_file = root / module.get("path", "") / "config.json"
            if module.get("type", "").endswith("Pooling") and pooling_file.is_file():
                mode = _sentence_transformers_pooling(read_object(pooling_file, restore))
                if mode is None and pooling_needed:
                    raise BertkitError(
                        f"{pooling_file} does not name a pooling mode bertkit knows (mean, cls or max tokens); "
                        f"{restore}, or pass --pooling"
                    )
                settings.pooling = mode or settings.pooling
        st_config = root / "sentence_bert_config.json"
        if st_config.is_file():
            length = read_object(st_config, restore).get("max_seq_length")
            if length is not None and not positive_int(length):
                raise BertkitError(
                    f"{st_config}: 'max_seq_length' must be a positive whole number of tokens, not {length!r}; "
                    f"{restore}"
                )
            settings.max_length = min(length or limit, limit)
        settings.origin = "sentence-transformers files"
    return settings


def hub_settings(
    repo: str, config, pooling_needed: bool = True, revision: str | None = None, note: bool | None = None
) -> Settings:
    """`model_settings` of a Hub model: its sentence-transformers files fetched into the cache and
    read as a folder's are (a sentence encoder that pools [CLS] and normalises, BGE say, was read
    with the mean of its tokens, not unit length). When they cannot be read (offline and not in the
    cache, the Hub refusing them), the defaults, and that is said (`note`, by default when the
    pooling is used)."""

    folder, known = hub.sentence_files(repo, revision)
    if folder is not None:
        return model_settings(str(folder), config, pooling_needed)
    if not known and (pooling_needed if note is None else note):

        console.print(
            f"note: {repo}: its sentence-transformers files (modules.json, its pooling module's config.json) could "
            "not be read (not in the cache, and the Hub out of reach or refusing them), so its pooling is not "
            "known: the mean of the tokens, not unit length (give --pooling and --normalize to choose)"
        )
    return Settings(max_length=_limit(config))


def _sentence_transformers_pooling(config: dict) -> str | None:
    for key, mode in (
        ("pooling_mode_mean_tokens", "mean"),
        ("pooling_mode_cls_token", "cls"),
        ("pooling_mode_max_tokens", "max"),
    ):
        if config.get(key):
            return mode
    return None


@dataclass
class Encoder:
    """A loaded encoder with its tokenizer and settings; `encode(texts)` gives one row per text."""

    model: object
    tokenizer: object
    settings: Settings
    name: str
    path: str
    truncated: int = 0
    _warned: set = field(default_factory=set)

    def features(self, texts: list[str]) -> list[dict]:
        encoded = self.tokenizer(texts, truncation=True, max_length=self.settings.max_length)
        ids = encoded["input_ids"]
        self.truncated += sum(1 for row in ids if len(row) >= self.settings.max_length)
        return [dict(zip(encoded, values, strict=True)) for values in zip(*encoded.values(), strict=True)]

    def encode(self, texts: list[str], batch_size: int = 32) -> np.ndarray:

        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        rows = forward(self.model, self.tokenizer, self.features(texts), batch_size, output=self._vectors)
        return np.stack(rows).astype(np.float32)

    def _vectors(self, out, inputs, rows):
        if getattr(self.model, "runtime", None) == "onnx":  # pooled and normalised inside the graph
            return out.sentence_embedding
        vectors = pool(out, inputs["attention_mask"], self.settings.pooling)
        return l2_normalize(vectors) if self.settings.normalize else vectors

    @property
    def dimension(self) -> int:
        return int(self.model.config.hidden_size)

    def report_truncation(self) -> None:
        if self.truncated:

            console.print(
                f"[yellow]note:[/yellow] {self.truncated:,} texts were longer than {self.settings.max_length} "
                "tokens and were cut to that length (--max-length sets it, up to the model's limit)"
            )

    def identity(self) -> str:
        """A string that changes when the model's weights or the encoding settings change."""
        where = os.path.abspath(self.path) if Path(self.path).exists() else self.path  # ./model and /x/model: one model
        parts = [where, self.settings.pooling, str(self.settings.normalize), str(self.settings.max_length)]
        files = [sorted(Path(self.path).glob(f"*.{kind}")) for kind in ("safetensors", "bin", "onnx")]
        for weights in [f for group in files for f in group]:
            stat = weights.stat()
            parts.append(f"{weights.name}:{stat.st_size}:{stat.st_mtime_ns}")
        return "|".join(parts)


def load_encoder(
    name: str,
    pooling: str | None = None,
    normalize: bool | None = None,
    max_length: int | None = None,
    device: str | None = None,
    trust_remote_code: bool = False,
    runtime: str | None = None,
    length_from: str | None = None,
    precision: str = "auto",
) -> Encoder:
    """Any BERT-family model (a bundle of any task, a plain HF folder, a hub id) as an encoder;
    explicit options win over what the model folder says, which wins over defaults. An ONNX
    export of an embed bundle (`runtime` auto or onnx) runs without torch. `length_from`: where
    `max_length` was read, when not from --max-length (an index's index.json), named in errors.
    `precision`: as `inference.precision_for` (auto: half precision on a CUDA GPU, fp32 elsewhere)."""

    opened = directory_identity(name) if Path(name).is_dir() else None  # before any of its files is read
    if opened is not None and choose_runtime(Path(name), runtime) == "onnx":
        refuse_half_onnx(precision, name)
        encoder = _onnx_encoder(name, pooling, normalize, max_length, length_from)
        check_unchanged(name, opened)
        return encoder
    from transformers import AutoConfig, AutoModel


    models.quiet_transformers()
    path = models.resolve(name)
    if pooling is not None and pooling not in POOLINGS:
        raise BertkitError(f"--pooling {pooling}: use one of {', '.join(POOLINGS)}")
    config = models.from_pretrained(AutoConfig, path, trust_remote_code)
    limit = models.position_limit(config)
    if max_length is not None and limit is not None and max_length > limit:
        raise _too_long(name, max_length, limit, length_from)
    # the model's own files are checked before its weights are read
    settings = model_settings(path, config, pooling is None) if Path(path).is_dir() else hub_settings(
        path, config, pooling is None
    )

    model, loading = load_weights(AutoModel, path, trust_remote_code, output_loading_info=True)
    if pooling is not None:
        settings.pooling = pooling
    if settings.pooling == "pooler" and any(k.startswith("pooler.") for k in loading.get("missing_keys", [])):
        raise BertkitError(
            f"{name} has no trained pooler layer (its checkpoint lacks the pooler weights): "
            "use pooling mean, cls or max"
        )
    if normalize is not None:
        settings.normalize = normalize
    if max_length is not None:
        settings.max_length = max_length
    tokenizer = load_tokenizer(path, trust_remote_code=trust_remote_code)
    check_unchanged(name, opened)
    place = pick_device(device)
    model = in_precision(model.to(place), precision_for(precision, place))
    return Encoder(model.eval(), tokenizer, settings, name, str(path))


def _too_long(name: str, max_length: int, limit: int, length_from: str | None) -> BertkitError:
    """A length past the model's: the option given, or the file it was read from (which no option fixes)."""
    if length_from is not None:
        return BertkitError(
            f"{length_from} is {max_length}: {name} reads at most {limit} tokens (its position embeddings); "
            "the file is damaged or the model was replaced"
        )
    return BertkitError(
        f"--max-length {max_length}: {name} reads at most {limit} tokens (its position embeddings). "
        f"Give --max-length {limit} or less."
    )


def _onnx_encoder(
    name: str, pooling: str | None, normalize: bool | None, max_length: int | None, length_from: str | None = None
) -> Encoder:
    """An exported embed bundle: pooling and normalisation are inside its graph, so options that
    ask for others cannot be honoured."""

    info = read_info(Path(name))
    if info is None or info["task"] != "embed":
        what = f"a {info['task']} model" if info is not None else "not an embed bundle"
        raise BertkitError(
            f"--model {name}: an ONNX bundle of {what}, whose graph gives no sentence vectors; export an embed "
            "bundle, or run the PyTorch bundle (--runtime torch on it)"
        )
    model = onnx_runtime.OnnxModel(Path(name))
    settings = model_settings(name, model.config)
    asked_and_baked = (("--pooling", pooling, settings.pooling), ("--normalize", normalize, settings.normalize))
    for option, asked, baked in asked_and_baked:
        if asked is not None and asked != baked:
            raise BertkitError(
                f"{option} {asked}: {name} is an ONNX bundle whose vectors are made inside the graph with "
                f"{option} {baked}; drop the option, or run the PyTorch bundle it was exported from"
            )
    if max_length is not None:
        limit = _limit(model.config)
        if max_length > limit:
            raise _too_long(name, max_length, limit, length_from)
        settings.max_length = max_length
    return Encoder(model, onnx_runtime.load_tokenizer(Path(name)), settings, name, str(name))


def _limit(config) -> int:

    return min(position_limit(config) or 512, 512)


def bundle_encoder(model, tokenizer, info: dict) -> Encoder:
    """An embed bundle's model and tokenizer, already loaded, as a sentence encoder with its settings."""
    settings = Settings(info.get("pooling", "mean"), bool(info.get("normalize")), info.get("max_length", 512), "bundle")
    return Encoder(model, tokenizer, settings, "bundle", "")

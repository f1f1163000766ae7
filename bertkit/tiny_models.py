"""`bertkit model tiny`: a randomly initialised model of the same family as a given one (BERT,
RoBERTa, DistilBERT, ELECTRA, ... whatever transformers builds from a config), a few layers deep
and a few dozen wide, for smoke tests in CI that must run in seconds on a CPU.

Only the source's config and tokenizer are read (from a local directory, a packaged model, or
the Hub, where only those files are fetched, never the weights). The result keeps the source's
`model_type` and its tokenizer and vocabulary, or, with a text to learn from, a small WordPiece
vocabulary (`tokenizer_training`; a Japanese source keeps its BertJapaneseTokenizer) so the
embedding matrix stays small. A folder holding only a tokenizer (`bertkit tokenizer train`,
Japanese included) gives a BERT whose vocabulary is that tokenizer's. It is written like every
bertkit output: staged, then published in one rename, with a manifest of kind `model`."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from bertkit.core import japanese, models, outputs
from bertkit.core.data.corpus import read_lines
from bertkit.core.errors import BertkitError, first_line
from bertkit.core.models import POSITION_OFFSET, position_limit
from bertkit.core.tokenization import load_tokenizer
from bertkit.core.tokenizer_training import train_wordpiece

KIND = "model"  # the manifest kind: --overwrite replaces only a tiny model bertkit wrote
MAX_POSITIONS = 512  # longer position tables (Longformer, ModernBERT) are cut to this
# where the feed-forward width lives, by family (BERT & co, DistilBERT, others)
INTERMEDIATE_KEYS = ("intermediate_size", "hidden_dim", "ffn_dim", "d_ff")


@dataclass(frozen=True)
class Shape:
    """The size asked for; `intermediate` None means 4 × hidden, the usual ratio."""

    layers: int = 2
    hidden: int = 64
    heads: int = 2
    intermediate: int | None = None

    def check(self) -> None:
        for option, value in (("--layers", self.layers), ("--hidden", self.hidden), ("--heads", self.heads)):
            if value < 1:
                raise BertkitError(f"{option} {value}: it must be at least 1")
        if self.intermediate is not None and self.intermediate < 1:
            raise BertkitError(f"--intermediate {self.intermediate}: it must be at least 1")
        if self.hidden % self.heads:
            raise BertkitError(
                f"--hidden {self.hidden} is not a multiple of --heads {self.heads}: each head gets an equal "
                f"share of the hidden size. Use --heads {_divisor_near(self.hidden, self.heads)} or another "
                "divisor of the hidden size."
            )


@dataclass(frozen=True)
class TinyModel:
    """What was built, as `bertkit model tiny` prints it."""

    path: Path
    source: str
    family: str  # the model_type
    architecture: str  # the class saved (BertModel, ...)
    layers: int
    hidden: int
    heads: int
    intermediate: int | None
    positions: int | None
    parameters: int
    vocab_size: int
    tokenizer: str  # its class
    vocabulary: str  # where the vocabulary comes from


def build_tiny(
    name: str,
    output: Path,
    shape: Shape = Shape(),
    vocab_from: Iterable[str] = (),
    vocab_size: int | None = None,
    text_column: str = "text",
    min_frequency: int = 2,
    seed: int = 0,
    overwrite: bool = False,
) -> TinyModel:
    """Build and write a tiny random model of `name`'s family to `output`; see the module."""

    vocab_from = [str(v) for v in vocab_from]
    shape.check()
    if vocab_size is not None and not vocab_from:
        raise BertkitError("--vocab-size needs --vocab-from FILE: the text to learn the vocabulary from")
    if vocab_from and vocab_size is None:
        raise BertkitError("--vocab-from needs --vocab-size N: how many entries the new vocabulary has")
    output = Path(output)
    protect = [*vocab_from, name]  # --overwrite never replaces a folder holding the source or the text
    outputs.check_output_dir(output, overwrite, protect, KIND)
    outputs.check_writable(output)  # before anything is loaded or learnt

    config, tokenizer, source = _load_source(name)
    bare = only_a_tokenizer(source)
    vocabulary = "the tokenizer folder's" if bare else "the source's"
    if vocab_from:
        tokenizer = _learn_vocabulary(tokenizer, vocab_from, vocab_size, text_column, min_frequency)
        vocabulary = f"learnt from {', '.join(vocab_from)}"
    learnt = bool(vocab_from) or bare  # a tokenizer folder's vocabulary is sized here too
    segments = bool(vocab_from)
    return write_tiny(config, tokenizer, shape, output, source, vocabulary, protect, seed, overwrite, learnt, segments)


def write_tiny(
    config,
    tokenizer,
    shape: Shape,
    output: Path,
    source: str,
    vocabulary: str,
    protect: list[str],
    seed: int = 0,
    overwrite: bool = False,
    learnt: bool = True,
    segments: bool | None = None,
) -> TinyModel:
    """Shrink `config` to `shape`, build its random model and write it with `tokenizer` (whose
    vocabulary was `learnt`, or is the source's; `segments`, default `learnt`: give the model
    the tokenizer's segment ids) to `output`; shared by `--from` and `--family`
    (bertkit/tiny_families.py)."""

    shrink(config, shape, source)
    _fit_vocabulary(config, tokenizer, learnt=learnt)
    model = _random_model(config, source, seed)
    if learnt if segments is None else segments:
        _segments(tokenizer, model, config)
    _check_runs(model, tokenizer, shape, source)
    with outputs.staged_dir(output, overwrite, KIND, protect) as staged:
        model.save_pretrained(str(staged))
        for key in ("local_files_only", "is_local"):  # how the source was read here, not settings to share
            tokenizer.init_kwargs.pop(key, None)
        tokenizer.save_pretrained(str(staged))
    return TinyModel(
        path=output,
        source=source,
        family=config.model_type,
        architecture=type(model).__name__,
        layers=config.num_hidden_layers,
        hidden=config.hidden_size,
        heads=config.num_attention_heads,
        intermediate=next((getattr(config, k) for k in INTERMEDIATE_KEYS if getattr(config, k, None)), None),
        positions=getattr(config, "max_position_embeddings", None),
        parameters=sum(p.numel() for p in model.parameters()),
        vocab_size=config.vocab_size,
        tokenizer=type(tokenizer).__name__,
        vocabulary=vocabulary,
    )


def _load_source(name: str):
    """The source's config and tokenizer (no weights), and the place they were read from. An
    uncached Hub id offline, or with the Hub out of reach, is one clear error (`models.resolve`)."""
    from transformers import AutoConfig


    models.quiet_transformers()
    source = models.resolve(name, tokenizer_only=True)
    config = tokenizer_folder_config(source) or models.from_pretrained(AutoConfig, source)
    missing = [k for k in ("hidden_size", "num_hidden_layers", "num_attention_heads") if _get(config, k) is None]
    if missing:
        raise BertkitError(
            f"{name} is a {config.model_type} model whose config has no {', '.join(missing)}: bertkit model tiny "
            "shrinks encoder models such as BERT, RoBERTa, DistilBERT or ELECTRA. Give one of those."
        )
    return config, load_tokenizer(source), source


def only_a_tokenizer(source: str) -> bool:
    """A local folder with a tokenizer and no config.json, as `bertkit tokenizer train` writes."""
    folder = Path(source)
    return folder.is_dir() and not (folder / "config.json").is_file()


def tokenizer_folder_config(source: str):
    """A tokenizer folder has no model config: a default BERT one (the family of the WordPiece
    tokenizers bertkit learns), which `shrink` sizes and `_fit_vocabulary` fits to the tokenizer.
    None for anything else."""
    if not only_a_tokenizer(source):
        return None
    from transformers import BertConfig

    return BertConfig()


def _get(config, key: str):
    try:
        return getattr(config, key)
    except AttributeError:
        return None


def shrink(config, shape: Shape, name: str = "the model") -> None:
    """Set `config` to `shape`: layers, hidden size, heads, feed-forward width, the sizes tied to
    the hidden size (ELECTRA's and ALBERT's embedding size, DeBERTa's pooler), and at most
    MAX_POSITIONS positions. The model type and the vocabulary stay as they are."""

    config.num_hidden_layers = shape.layers  # attribute_map turns these into DistilBERT's n_layers, ...
    config.hidden_size = shape.hidden
    config.num_attention_heads = shape.heads
    wide = shape.intermediate or 4 * shape.hidden
    for key in INTERMEDIATE_KEYS:
        if _get(config, key):
            setattr(config, key, wide)
            break
    for key in ("embedding_size", "pooler_hidden_size"):
        if _get(config, key):
            setattr(config, key, shape.hidden)
    if _get(config, "num_hidden_groups"):  # ALBERT: groups of shared layers, at most one a layer
        config.num_hidden_groups = min(config.num_hidden_groups, shape.layers)
    layer_types = _get(config, "layer_types")
    if isinstance(layer_types, list) and layer_types:  # ModernBERT: one attention kind a layer, in a cycle
        config.layer_types = [layer_types[i % len(layer_types)] for i in range(shape.layers)]
    if _get(config, "num_key_value_heads"):
        config.num_key_value_heads = shape.heads
    if _get(config, "head_dim"):
        config.head_dim = shape.hidden // shape.heads
    positions = _get(config, "max_position_embeddings")
    if isinstance(positions, int):
        offset = (config.pad_token_id or 0) + 1 if config.model_type in POSITION_OFFSET else 0
        config.max_position_embeddings = min(positions, MAX_POSITIONS + offset)
    config.num_labels = 2  # a classifier's labels are no part of the encoder: back to the defaults
    config.finetuning_task = None
    config.dtype = "float32"


def _fit_vocabulary(config, tokenizer, learnt: bool) -> None:
    """The embedding matrix covers every token id; a learnt vocabulary sets its size and the
    special token ids. The tokenizer reads no more tokens than the positions hold."""

    if learnt:
        config.vocab_size = len(tokenizer)
        for key, token in (("pad_token_id", "pad"), ("bos_token_id", "cls"), ("eos_token_id", "sep")):
            if _get(config, key) is not None:
                setattr(config, key, getattr(tokenizer, f"{token}_token_id"))
        for key in ("cls_token_id", "sep_token_id"):
            if _get(config, key) is not None:
                setattr(config, key, getattr(tokenizer, key))
    else:
        config.vocab_size = max(config.vocab_size, len(tokenizer))
    limit = position_limit(config)
    if limit is not None and (tokenizer.model_max_length or 0) > limit:
        tokenizer.model_max_length = limit


def _learn_vocabulary(source_tokenizer, paths: list[str], size: int, column: str, min_frequency: int):
    """A WordPiece tokenizer learnt from `paths` (Japanese: MeCab words first, as the source),
    cased or not as the source is."""

    is_japanese = japanese.is_japanese(source_tokenizer)
    lowercase = bool(getattr(source_tokenizer, "do_lower_case", False))
    limit = min(source_tokenizer.model_max_length or MAX_POSITIONS, MAX_POSITIONS)
    texts = (line for path in paths for line in read_lines(path, column, option="--text-column"))
    where = ", ".join(paths)
    return train_wordpiece(texts, size, lowercase, min_frequency, limit, where, japanese=is_japanese)


def _segments(tokenizer, model, config) -> None:
    """A learnt (BERT) tokenizer gives the second text of a pair segment id 1; a family with one
    segment (RoBERTa) or none (DistilBERT) would fail on it, so its tokenizer gives none."""
    import inspect


    takes_types = "token_type_ids" in inspect.signature(model.forward).parameters
    if not japanese.is_japanese(tokenizer) and (not takes_types or (_get(config, "type_vocab_size") or 0) < 2):
        tokenizer.model_input_names = ["input_ids", "attention_mask"]
        tokenizer.init_kwargs["model_input_names"] = tokenizer.model_input_names  # saved with it


def _random_model(config, name: str, seed: int):
    """The base model (no task head) of `config`'s family with random weights from `seed`."""
    import torch
    from transformers import AutoModel

    torch.manual_seed(seed)
    try:
        model = AutoModel.from_config(config)
    except (ValueError, TypeError, RuntimeError, AssertionError) as err:
        first = first_line(err)
        raise BertkitError(
            f"cannot build a tiny {config.model_type} model from {name} with these sizes ({first}). "
            "Try other --hidden / --heads / --layers values."
        ) from None
    return model.float()


def _check_runs(model, tokenizer, shape: Shape, name: str) -> None:
    """One forward pass before anything is written: a size the config takes can still fail in the
    model (ModernBERT's rotary position embeddings turn pairs of numbers in each head, so an odd
    head size broke every forward pass of a model `model tiny` had written)."""
    import torch

    head = shape.hidden // shape.heads
    batch = tokenizer(["a tiny check", "two"], padding=True, return_tensors="pt")
    try:
        with torch.no_grad():
            model(**batch)
    except (RuntimeError, ValueError, IndexError, TypeError) as err:
        first = first_line(err)
        hint = (
            f"each head's size (--hidden / --heads = {head}) is odd, and rotary position embeddings need it even: "
            f"use --hidden {shape.heads * (head + 1)}"
            if head % 2 and any("rope" in key for key in model.config.to_dict())
            else "try other --hidden / --heads / --layers values"
        )
        raise BertkitError(
            f"the tiny {model.config.model_type} model built from {name} with --hidden {shape.hidden} --heads "
            f"{shape.heads} does not run ({first}); {hint}"
        ) from None


def _divisor_near(hidden: int, heads: int) -> int:
    return min((d for d in range(1, hidden + 1) if hidden % d == 0), key=lambda d: (abs(d - heads), d))

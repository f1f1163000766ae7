"""Loading weights from a model folder, adapter bundles included: every command that runs a
bundle loads its weights here (`load_weights`), and what is loaded is checked whole and finite
(bertkit/core/loaded_checks.py). An adapter bundle's base is found and checked (`base.find_base`),
loaded, and the adapter put on it, kept apart from the base weights: every command computes the
same numbers for a text, whether the bundle runs alone or beside other adapters of its base on the
weights they share (`SharedBases`: `bertkit serve` with several adapter bundles holds each base
once). Only `adapter merge` and `export` ask for the adapter merged into the weights (`merged`): they
write a new model, whose last digits may differ from the adapter bundle's."""

from __future__ import annotations

from pathlib import Path

from bertkit.core import models
from bertkit.core.adapters import quiet_peft, require_peft
from bertkit.core.adapters.base import ADAPTER_FILE, adapter_of, find_base, is_adapter_bundle
from bertkit.core.errors import BertkitError, first_line
from bertkit.core.loaded_checks import AGAIN, check_adapter_tensors, check_finite_output, check_whole, is_bertkit_bundle
from bertkit.core.run_info import read_object

ADAPTER_WEIGHTS = ("adapter_model.safetensors", "adapter_model.bin")  # peft's weight files, in the order it reads
ADAPTER_KIND = "LORA"  # the peft_type bertkit trains and reads


class SharedBases:
    """The base weights already in memory, by base hash: a model loaded with the same base gets
    these parameters instead of its own copy (only the adapters and heads are its own)."""

    def __init__(self):
        self.parameters: dict[str, dict] = {}

    def share(self, model, base_hash: str) -> int:
        """Point `model`'s base parameters at the ones already held for `base_hash` (keeping new
        ones for the next model); returns how many were shared."""
        held = self.parameters.setdefault(base_hash, {})
        base = model.base_model
        shared = 0
        for name, parameter in list(base.named_parameters()):
            kept = held.get(name)
            if kept is None or kept.shape != parameter.shape:
                held[name] = parameter
                continue
            owner, _, leaf = name.rpartition(".")
            module = base.get_submodule(owner) if owner else base
            setattr(module, leaf, kept)
            shared += 1
        return shared


def load_weights(
    loader, source: str, trusted: bool = False, shared: SharedBases | None = None, merged: bool = False, **kwargs
):
    """`models.weights_from_pretrained` for any model folder, a bundle checked whole and finite; an
    adapter bundle is loaded on its base, the adapter kept apart (on `shared` weights when given),
    or merged into them."""
    if is_adapter_bundle(source):
        loaded = load_adapter_bundle(loader, Path(source), trusted, shared, merged, **kwargs)
    else:
        asked = kwargs.pop("output_loading_info", False)
        model, loading = models.weights_from_pretrained(loader, source, trusted, output_loading_info=True, **kwargs)
        if is_bertkit_bundle(source):
            check_whole(source, loading)
        loaded = (model, loading) if asked else model
    if is_bertkit_bundle(source):
        check_finite_output(loaded[0] if isinstance(loaded, tuple) else loaded, source)
    return loaded


def load_adapter_bundle(
    loader, bundle: Path, trusted: bool, shared: SharedBases | None = None, merged: bool = False, **kwargs
):
    """The model of an adapter bundle: the class its config names (the task model the adapter's
    layers were named in: an encoder class such as AutoModel finds none of them), the adapter put on
    it, and for a caller that asked for the bare encoder (embed, search, attention on a classify
    bundle) the encoder inside."""
    require_peft()
    from peft import PeftModel
    from transformers import AutoConfig, AutoModel

    adapter = adapter_of(bundle)
    base = find_base(bundle, adapter)
    weights = check_adapter_files(bundle)
    config = models.from_pretrained(AutoConfig, str(bundle), trusted)
    task_class = trained_class(config)
    loaded = models.weights_from_pretrained(task_class or loader, base, trusted, config=config, **kwargs)
    model, loading = loaded if isinstance(loaded, tuple) else (loaded, None)
    if shared is not None:
        shared.share(model, adapter["base_hash"])
    with quiet_peft():
        try:
            adapted = PeftModel.from_pretrained(model, str(bundle))
        except (RuntimeError, ValueError, KeyError, TypeError) as err:  # files that do not fit each other
            reason = first_line(err)
            raise BertkitError(
                f"{bundle}: its adapter files (adapter_config.json, {ADAPTER_WEIGHTS[0]}) do not load together "
                f"({reason[:200]}); {AGAIN}"
            ) from None
        check_adapter_tensors(adapted, weights)
        # merged: one plain model; else the base model with the LoRA layers inside it, apart
        model = adapted.merge_and_unload() if merged else adapted.get_base_model()
    if loader is AutoModel and task_class is not None:
        model = model.base_model  # the encoder of a task model (a bare encoder is its own)
    models.check_finite_weights(model, str(bundle))
    return (model, loading) if loading is not None else model


def trained_class(config):
    """The transformers class a bundle's config names (`architectures`), or None."""
    import transformers

    names = getattr(config, "architectures", None) or []
    return getattr(transformers, names[0], None) if names else None


def check_adapter_files(bundle: Path) -> Path:
    """The adapter's files are there and whole, as a whole model's are checked: peft would look for
    a missing one on the Hub, and a cut one fails deep inside safetensors or json. Returns the
    weights file peft reads."""

    config = bundle / ADAPTER_FILE
    if not config.is_file():
        raise BertkitError(
            f"{bundle}: an adapter bundle without its {ADAPTER_FILE}; {AGAIN}"
        )
    kind = read_object(config, AGAIN).get("peft_type")  # a cut or edited file: named, exit 2
    if kind != ADAPTER_KIND:
        raise BertkitError(
            f"{config}: peft_type {kind!r}; bertkit trains and reads {ADAPTER_KIND} adapters only. Merge it with "
            "the library that made it, or train a LoRA adapter with train.adapter"
        )
    found = [bundle / name for name in ADAPTER_WEIGHTS if (bundle / name).is_file()]
    if not found:
        raise BertkitError(
            f"{bundle}: an adapter bundle without its weights ({ADAPTER_WEIGHTS[0]}); {AGAIN}"
        )
    if found[0].suffix != ".safetensors":
        return found[0]
    try:
        from safetensors import safe_open

        with safe_open(str(found[0]), framework="pt") as weights:
            for key in weights.keys():
                weights.get_slice(key)  # reads the header's offsets against the file's length
    except Exception as err:
        reason = first_line(err)
        raise BertkitError(
            f"{found[0]} is damaged or incomplete ({reason}); {AGAIN}"
        ) from None
    return found[0]

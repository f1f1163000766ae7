"""Loading weights from a model folder, adapter bundles included: every command that runs a
bundle loads its weights here (`load_weights`). An adapter bundle's base is found and checked
(`base.find_base`), loaded, and the adapter put on it: merged into the weights (one model, as
fast as a plain one), or kept apart on weights shared with the other adapters of the same base
(`SharedBases`: `bertkit serve` with several adapter bundles holds each base once)."""

from __future__ import annotations

from pathlib import Path

from bertkit import models
from bertkit.adapters import quiet_peft, require_peft
from bertkit.adapters.base import adapter_of, find_base, is_adapter_bundle


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


def load_weights(loader, source: str, trusted: bool = False, shared: SharedBases | None = None, **kwargs):
    """`models.weights_from_pretrained` for any model folder; an adapter bundle is loaded on its
    base (merged, or on `shared` weights unmerged)."""
    if not is_adapter_bundle(source):
        return models.weights_from_pretrained(loader, source, trusted, **kwargs)
    return load_adapter_bundle(loader, Path(source), trusted, shared, **kwargs)


def load_adapter_bundle(loader, bundle: Path, trusted: bool, shared: SharedBases | None = None, **kwargs):
    require_peft()
    from peft import PeftModel
    from transformers import AutoConfig

    adapter = adapter_of(bundle)
    base = find_base(bundle, adapter)
    config = models.from_pretrained(AutoConfig, str(bundle), trusted)
    loaded = models.weights_from_pretrained(loader, base, trusted, config=config, **kwargs)
    model, loading = loaded if isinstance(loaded, tuple) else (loaded, None)
    if shared is not None:
        shared.share(model, adapter["base_hash"])
    with quiet_peft():
        adapted = PeftModel.from_pretrained(model, str(bundle))
        # merged: one plain model; shared: the base model with the LoRA layers inside it, apart
        model = adapted.get_base_model() if shared is not None else adapted.merge_and_unload()
    models.check_finite_weights(model, str(bundle))
    return (model, loading) if loading is not None else model

"""What a bundle's loaded model must be before a command runs it (`adapters/loading.py:
load_weights` calls these for every bundle it loads):

- whole: every tensor the model reads came from the bundle's files. transformers fills a tensor
  missing from a weights file with random values and only logs it, so a file that lost a tensor
  gave a different answer on every run, exit 0. Bundles are written whole by bertkit, so a missing
  tensor is damage; the one exception is the pooler of an encoder read out of a task model that was
  built without one (a RoBERTa classifier, any NER or QA model, read by embed or attention).
- an adapter's tensors, the same way: peft leaves a LoRA matrix it does not find at its
  initial value (B = 0: the adapter silently off for that layer).
- finite outputs: weights can each be finite and still overflow together (an adapter scaled by a
  `lora_alpha` of 1e38): one forward pass over a few tokens finds it at load, before anything is
  predicted, merged or exported.
"""

from __future__ import annotations

from pathlib import Path

from bertkit.core.errors import BertkitError
from bertkit.core.run_info import INFO_FILE

AGAIN = "copy the bundle again, or train it again"
PROBE_TOKENS = 4  # token ids 0..3 of the model's vocabulary: any id the embeddings hold will do


def is_bertkit_bundle(source: str) -> bool:

    return (Path(source) / INFO_FILE).is_file()


def _some(names: list[str]) -> str:
    """The first three of `names`, and '...' when there are more."""
    return ", ".join(sorted(names)[:3]) + (", ..." if len(names) > 3 else "")


def check_whole(source: str, loading: dict) -> None:
    """Refuses a bundle whose weights file lacks a tensor the model reads (`loading`: transformers'
    `output_loading_info`)."""
    missing = [k for k in loading.get("missing_keys", []) if not k.startswith("pooler.")]
    if missing:
        raise BertkitError(
            f"{source}: its weights file lacks {len(missing)} tensor(s) the model reads ({_some(missing)}); they would "
            f"be random, a different answer on every run. The bundle is damaged: {AGAIN}"
        )


def check_adapter_tensors(adapted, weights: Path) -> None:
    """Refuses an adapter whose weights file lacks a tensor its layers read."""
    from peft.utils import get_peft_model_state_dict

    expected = set(get_peft_model_state_dict(adapted))
    missing = list(expected - set(tensor_names(weights)))
    if missing:
        raise BertkitError(
            f"{weights}: lacks {len(missing)} tensor(s) of the adapter ({_some(missing)}); those layers would run "
            f"without it. The bundle is damaged: {AGAIN}"
        )


def tensor_names(weights: Path) -> list[str]:
    if weights.suffix == ".safetensors":
        from safetensors import safe_open

        with safe_open(str(weights), framework="pt") as opened:
            return list(opened.keys())
    import torch

    return list(torch.load(weights, map_location="cpu", weights_only=True))


def check_finite_output(model, source: str) -> None:
    """One forward pass over a few tokens; non-finite outputs are refused, naming the cause."""
    import torch

    size = getattr(model.config, "vocab_size", None) or PROBE_TOKENS
    ids = torch.arange(min(PROBE_TOKENS, size)).unsqueeze(0)
    was_training = model.training
    model.eval()
    try:
        with torch.no_grad():
            out = model(input_ids=ids, attention_mask=torch.ones_like(ids))
    except Exception:  # a model the probe cannot run: the command's own pass says what is wrong
        return
    finally:
        model.train(was_training)
    values = out.values() if hasattr(out, "values") else [out]
    if any(torch.is_tensor(v) and v.is_floating_point() and not torch.isfinite(v).all() for v in values):
        raise BertkitError(
            f"{source}: its model gives NaN or infinite outputs although each weight is finite (weights or an "
            f"adapter scaled far too large: see lora_alpha in adapter_config.json); nothing it answered would "
            f"mean anything. The bundle is damaged: {AGAIN}"
        )

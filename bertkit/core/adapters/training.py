"""Training with `train.adapter`: the base frozen, LoRA matrices on the chosen layers, the task
head trained in full; and the bundle that holds only those (peft's adapter files) with the
config that names the labels."""

from __future__ import annotations

from pathlib import Path

from bertkit.core.adapters import quiet_peft, require_peft
from bertkit.core.adapters.base import ADAPTER_FILE, describe_base
from bertkit.core.adapters.targets import head_modules, target_modules
from bertkit.core.errors import BertkitError
from bertkit.core.progress import console
from bertkit.core.run_info import read_object


def attach(model, saved, settings, name: str, source: str, revision: str | None = None):
    """`model` with a LoRA adapter on `saved` (the transformers model the task saves: `model`
    itself, or the encoder inside an embed model), and the adapter's record for bertkit.json."""
    require_peft()
    from peft import LoraConfig, get_peft_model

    targets, endings = target_modules(saved, settings.target_modules)
    head = head_modules(saved)
    config = LoraConfig(
        r=settings.r,
        lora_alpha=settings.alpha,
        lora_dropout=settings.dropout,
        target_modules=targets,
        modules_to_save=head or None,
    )
    with quiet_peft():
        adapted = get_peft_model(saved, config)
    trainable, total = adapted.get_nb_trainable_parameters()
    record = {
        "kind": settings.kind,
        "r": settings.r,
        "alpha": settings.alpha,
        "dropout": settings.dropout,
        "target_modules": endings,
        "layers_adapted": len(targets),
        "head": head,
        "trainable_parameters": trainable,
        "parameters": total,
        **describe_base(name, source, revision),
    }

    narrowest = min(min(saved.get_submodule(name).weight.shape) for name in targets)
    if settings.r >= narrowest:
        console.print(
            f"[yellow]warning:[/yellow] train.adapter.r {settings.r} is not below the width of the narrowest adapted "
            f"layer ({narrowest}): the adapter then has as many parameters as the layers it adapts and can do no "
            "more than training them in full. Lower train.adapter.r (8 is the usual rank)"
        )
    console.print(
        f"adapter: LoRA r={settings.r} on {len(targets)} layers{' + head ' + ', '.join(head) if head else ''}; "
        f"training {trainable:,} of {total:,} parameters ({100 * trainable / total:.2f}%)"
    )
    if saved is model:
        return adapted, record
    for child_name, child in model.named_children():  # an embed model: its encoder is replaced
        if child is saved:
            setattr(model, child_name, adapted)
            return model, record
    raise AssertionError("the task's saved model is not a direct part of its training model")


def is_adapted(model) -> bool:
    """Whether `model` is a peft model (without importing peft when it is not installed)."""
    return type(model).__module__.startswith("peft.")


def save(adapted, folder: Path) -> None:
    """The adapter and the head (peft's files) and the task model's config (labels, sizes)."""
    adapted.save_pretrained(str(folder))
    (folder / "README.md").unlink(missing_ok=True)  # peft's card; bertkit writes its own
    inner = adapted.get_base_model()
    inner.config.architectures = [type(inner).__name__]
    inner.config.save_pretrained(str(folder))


def check_resume(checkpoint: Path, record: dict | None, facts: dict | None = None) -> None:
    """--resume continues a checkpoint with the same kind of model: one written with an adapter
    (peft's adapter_config.json in it) needs the same train.adapter, one without needs none (the
    Trainer otherwise stopped on mismatched tensors or optimizer groups, with a traceback); and an
    adapter's checkpoint holds the adapter only, so it continues on the base it started on (the
    hash the run recorded in `facts`, bertkit/training/run_dir.py: `run_facts`)."""

    saved_file = Path(checkpoint) / ADAPTER_FILE
    saved = read_object(saved_file, "start again without --resume (--overwrite)") if saved_file.is_file() else None
    start = "start again without --resume (--overwrite), or resume with the settings it was written with"
    if saved is None and record is None:
        return
    if saved is None:
        raise BertkitError(
            f"--resume: {checkpoint} was written by a run without train.adapter, and this run sets it; {start}"
        )
    layers = len(saved.get("target_modules") or [])
    was = f"LoRA r={saved.get('r')}, alpha {saved.get('lora_alpha'):g}, on {layers} layers"
    if record is None:
        raise BertkitError(
            f"--resume: {checkpoint} was written by a run with train.adapter ({was}), and this run sets none; {start}"
        )
    now = (record["r"], float(record["alpha"]), record["layers_adapted"])
    if (saved.get("r"), float(saved.get("lora_alpha") or 0), layers) != now:
        raise BertkitError(
            f"--resume: {checkpoint} was written with train.adapter {was}; this run asks for LoRA r={now[0]}, alpha "
            f"{now[1]:g}, on {now[2]} layers. {start[0].upper()}{start[1:]}"
        )
    started_on = (facts or {}).get("adapter_base_hash")
    if started_on and started_on != record["base_hash"]:
        raise BertkitError(
            f"--resume: the adapter in {checkpoint} was trained so far on a base whose weights hash "
            f"{started_on[:19]}..., and this run's model.name {record['base_model']} hashes "
            f"{record['base_hash'][:19]}...: an adapter learnt on one model means nothing on another. Resume with the "
            "model the run started with, or start again without --resume (--overwrite)"
        )

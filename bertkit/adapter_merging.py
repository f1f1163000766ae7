"""`bertkit adapter merge`: an adapter bundle made a plain bundle, its adapter merged into the base
weights. The result is like any bundle `bertkit train` writes without an adapter: it needs
no peft and no base model, and `bertkit export` works on it."""

from __future__ import annotations

import shutil
from pathlib import Path

from bertkit.core import outputs
from bertkit.core.adapters.base import bundle_inputs, is_adapter_bundle
from bertkit.core.errors import BertkitError
from bertkit.core.run_info import INFO_FILE
from bertkit.tasks import get_task
from bertkit.tasks.bundle import open_bundle
from bertkit.training import card

KEPT = ("metrics.json",)  # files of the adapter bundle that hold for the merged one as they are


def not_an_adapter(path: str) -> BertkitError:
    return BertkitError(
        f"--model {path} holds a whole model, not an adapter (no adapter_config.json and adapter record in "
        "bertkit.json); it needs no merging"
    )


def merge_bundle(path: str, output: str, overwrite: bool = False) -> Path:
    """Write the merged bundle of the adapter bundle at `path` to `output`; returns its path."""

    if (Path(path) / "config.json").is_file() and not is_adapter_bundle(path):
        raise not_an_adapter(path)
    bundle = open_bundle(path, runtime="torch")  # no model at all (an empty or data folder): said as such
    target = Path(output)
    protect = bundle_inputs(path)
    outputs.check_output_dir(target, overwrite, protect, "bundle")
    tokenizer = bundle.load_tokenizer()
    model = bundle.load_model(get_task(bundle.task).auto_model, "cpu", merged=True)
    info = merged_info(bundle.info.to_dict(), path)
    with outputs.staged_dir(target, overwrite, "bundle", protect) as staged:
        model.save_pretrained(str(staged))
        tokenizer.save_pretrained(str(staged))
        for name in KEPT:
            if (Path(path) / name).is_file():
                shutil.copyfile(Path(path) / name, staged / name)
        for plot in Path(path).glob("*.png"):
            shutil.copyfile(plot, staged / plot.name)
        outputs.write_json(staged / INFO_FILE, info, undefined_as_null=True)
        card.model_card(info, staged / "README.md")
    return target


def merged_info(info: dict, source: str) -> dict:
    """An adapter bundle's description for a bundle of the merged model: the adapter record kept
    under `merged_adapter` (with the bundle it came from), no longer one to load."""
    adapter = info.pop("adapter", None)
    if adapter is not None:
        info["merged_adapter"] = {**adapter, "merged_from": str(Path(source).resolve())}
    return info

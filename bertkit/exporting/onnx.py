"""`bertkit export --format onnx`: a PyTorch bundle as an ONNX bundle, checked before it is kept.

The exported directory is a bertkit bundle that `predict`, `evaluate`, `embed`, `similarity` and
`search` run with onnxruntime and no torch, laid out as Optimum's `ORTModelFor...` classes read
one: `model.onnx` (fp32, or int8 with `--quantize int8`: one precision a bundle), `config.json`,
the tokenizer files, and `bertkit.json` (the original's description plus `runtime: onnx` and an
`export` record: precision, quantisation, opset, inputs, outputs and what the checks found).
"""

from __future__ import annotations

import time
from dataclasses import replace
from pathlib import Path

from bertkit.adapter_merging import merged_info
from bertkit.core import outputs
from bertkit.core.adapters.base import bundle_inputs
from bertkit.core.errors import BertkitError
from bertkit.core.onnx_runtime import ONNX_FILE, OnnxModel, holds_onnx, holds_torch, need_onnx
from bertkit.core.progress import status
from bertkit.exporting.calibration import METHOD, activation_matmuls, quantize_static, record_inputs
from bertkit.exporting.checks import Report, check_format, check_fp32, check_texts, compare_int8
from bertkit.exporting.graphs import OPSET, ROLES, export_graph, projection_roles
from bertkit.exporting.smoothing import ALPHA, smooth_graph
from bertkit.tasks import get_task
from bertkit.tasks.bundle import open_bundle

FORMATS = ("onnx",)
QUANTIZE = ("int8",)
# the least share of the check data's predictions an int8 export must keep as fp32 gives them to be
# published (`--min-agreement`): a model exported to save money should not change one answer in twenty
MIN_AGREEMENT = 0.99
FP32_FILE = "model-fp32.onnx"  # the unquantised graph while an int8 export is made (not kept)
SMOOTHED_FILE = "model-smoothed.onnx"  # the same, its activations smoothed, before int8 (not kept)


def default_output(model: str, quantize: str | None) -> Path:
    """Beside the bundle: `<M>-onnx`, or `<M>-onnx-int8` (named from the bundle's own folder, so
    that `-m .` inside a bundle does not write `.-onnx` into it)."""
    source = Path(model)
    if source.name in ("", ".", ".."):
        source = source.resolve()
    return source.with_name(source.name + ("-onnx-int8" if quantize else "-onnx"))


CHECK_DATA_ROLES = ("validation", "test", "train")  # the order `--check-data`'s default is looked for in


def check_data_of(info, given: str | None) -> tuple[Path | None, str | None]:
    """The labelled data the int8 check scores and where it came from: --check-data ("given"),
    else the bundle's validation file, else its test file, else its training file (the automatic
    validation split is drawn from it), as its config names them; (None, None) when none is here."""
    if given:
        if Path(given).is_dir():
            raise BertkitError(
                f"--check-data {given}: a folder; the export checks on one file (CSV, TSV, JSON lines, JSON, "
                "Parquet, CoNLL or SQuAD): give one of the folder's files, or the data as one file"
            )
        if not Path(given).is_file():
            what = "no such file" if not Path(given).exists() else "not a regular file"
            raise BertkitError(f"--check-data {given}: {what}")
        return Path(given), "given"
    data = (info.get("config") or {}).get("data") or {}
    for role in CHECK_DATA_ROLES:
        source = data.get(role) if isinstance(data, dict) else None
        path = source.get("path") if isinstance(source, dict) else None
        if isinstance(path, str) and Path(path).is_file():
            return Path(path), role
    return None, None


def no_calibration_data(info, given: str | None) -> BertkitError:
    data = (info.get("config") or {}).get("data") or {}
    named = [
        str(source.get("path"))
        for role in CHECK_DATA_ROLES
        if isinstance(data, dict) and isinstance(source := data.get(role), dict) and source.get("path")
    ]
    where = (
        f"the files its bertkit.json names ({', '.join(named)}) are not here"
        if named
        else "its bertkit.json names none"
    )
    return BertkitError(
        f"--quantize int8 calibrates its int8 scales on the bundle's own data, and {where}; give a labelled file "
        "in the task's format with --check-data FILE"
    )


def check_overwrite_target(target: Path, model: str) -> None:
    """`--overwrite` replaces an existing folder only when it is an earlier export of this same
    bundle (its bertkit.json says runtime onnx, exported from `model`): never a trained bundle, nor
    another model's export."""
    import json

    if not target.exists():
        return
    info_file = target / "bertkit.json"
    try:
        info = json.loads(info_file.read_text(encoding="utf-8"))
        source = info["export"]["source"] if info.get("runtime") == "onnx" else None
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        source = None
    if not isinstance(source, str) or Path(source).resolve() != Path(model).resolve():
        what = f"an export of {source}" if isinstance(source, str) else "not an ONNX export made by bertkit export"
        raise BertkitError(
            f"--overwrite: {target} is {what}, not an earlier export of {model}; --overwrite replaces only this "
            "export's own earlier output. Choose another --output, or remove the folder yourself"
        )


def export_bundle(
    model: str,
    fmt: str = "onnx",
    quantize: str | None = None,
    output: str | None = None,
    overwrite: bool = False,
    check_data: str | None = None,
    trust_remote_code: bool = False,
    min_agreement: float = MIN_AGREEMENT,
) -> tuple[Path, dict]:
    """Export the bundle at `model`; returns the new bundle's path and its `export` record. An int8
    export whose predictions agree with fp32's on less than `min_agreement` of the check data is
    not published."""
    if not 0 <= min_agreement <= 1:
        raise BertkitError(f"--min-agreement {min_agreement}: a share between 0 and 1, e.g. 0.99")

    if fmt not in FORMATS:
        raise BertkitError(f"--format {fmt}: use one of {', '.join(FORMATS)}")
    if quantize is not None and quantize not in QUANTIZE:
        raise BertkitError(f"--quantize {quantize}: use one of {', '.join(QUANTIZE)}")
    need_onnx("bertkit export", "onnx")
    ort = need_onnx("bertkit export")
    root = Path(model)
    if root.is_dir() and holds_onnx(root) and not holds_torch(root):
        raise BertkitError(f"--model {model} is already an ONNX bundle; give the PyTorch bundle it was exported from")
    bundle = open_bundle(model, trust_remote_code, runtime="torch")
    task = get_task(bundle.task)
    if task.export is None:
        raise BertkitError(f"--model {model}: {task.name} models have no ONNX export (the task has no export part)")
    target = Path(output) if output else default_output(model, quantize)
    protect = bundle_inputs(model)  # an adapter bundle's base too
    outputs.check_output_dir(target, overwrite, protect, "bundle")
    if overwrite:
        check_overwrite_target(target, model)
    tokenizer = bundle.load_tokenizer()
    network = bundle.load_model(task.auto_model, "cpu", merged=True)
    info = bundle.info
    data, role = check_data_of(info, check_data)
    if quantize and data is None:
        raise no_calibration_data(info, check_data)
    report = Report(data=str(data) if data else None, data_role=role)
    fmt = check_format(task, data, given=bool(check_data))
    started = time.perf_counter()
    with outputs.staged_dir(target, overwrite, "bundle", protect) as staged:
        fp32_file = staged / (FP32_FILE if quantize else ONNX_FILE)
        with status(f"exporting {model} to ONNX"):
            names, graph = export_graph(network, tokenizer, task, info, fp32_file)
        network.config.save_pretrained(str(staged))
        tokenizer.save_pretrained(str(staged))
        fp32 = OnnxModel(staged, file=fp32_file.name)
        with status("checking the ONNX graph against PyTorch"):
            texts = check_texts(task, info, data, fmt, given=bool(check_data))
            check_fp32(graph, fp32, tokenizer, texts, names, report)
        calibration = recipe = None
        if quantize:
            with status(f"calibrating int8 on {data}"):
                rows = record_inputs(task, fp32, tokenizer, info, data, fmt)
            calibration = {"data": str(data), "rows": len(rows), "method": METHOD}
            for rung, kept in enumerate(KEPT_FP32, start=1):
                attempt = replace(report, int8={}, notes=list(report.notes))
                with status("quantising to int8" + (f" (keeping {', '.join(kept)} in fp32)" if rung > 1 else "")):
                    tried = recipe
                    recipe = quantize_int8(fp32_file, staged, rows, kept)
                with status("checking int8 against fp32"):
                    compare_int8(task, fp32, OnnxModel(staged), tokenizer, info, data, fmt, attempt)
                recipe["agreement"] = attempt.int8.get("agreement")
                if tried:
                    recipe["instead_of"] = tried
                    attempt.notes.append(safer_note(tried, recipe, min_agreement))
                if recipe["agreement"] is None or recipe["agreement"] >= min_agreement or rung == len(KEPT_FP32):
                    break
            report = attempt
            refuse_disagreement(report.int8, data, min_agreement)
            del fp32
            fp32_file.unlink()
        record = {
            "format": "onnx",
            "precision": quantize or "fp32",
            "quantization": QUANTIZATION if quantize else None,
            "int8": recipe if quantize else None,
            "calibration": calibration,
            "opset": OPSET,
            "exporter": "torch.onnx (TorchScript)",
            "inputs": names,
            "outputs": list(task.export.outputs),
            "source": str(Path(model).resolve()),
            "onnxruntime": ort.__version__,
            "seconds": round(time.perf_counter() - started, 1),
            "check": report.as_dict(),
        }
        described = merged_info(info.to_dict(), model)  # an adapter bundle is exported merged
        outputs.write_json(staged / outputs.INFO_FILE, {**described, "runtime": "onnx", "export": record})
    return target, record


QUANTIZATION = (
    "onnxruntime static (QDQ): int8 weights (MatMul, Gemm) per channel, uint8 activations with fixed scales "
    "calibrated on the bundle's data, their outlier channels smoothed into the weights (SmoothQuant)"
)


# The projections int8 leaves in fp32 (exporting/graphs.py's roles), fastest first: the first whose
# int8 graph agrees with fp32 on --min-agreement of the check data is published. The feed-forward
# output's input, the GELU's product, loses labels in int8 with or without smoothing, in every layer;
# with it in fp32 MiniLM's SST-2 classifiers keep 99.0 % to 99.5 % of labels, and with the
# feed-forward input too 99.7 % to 99.9 %, at a cost in speed (docs/deployment.md)
KEPT_FP32 = (("ffn-out",), ("ffn-out", "ffn-in"))


def safer_note(tried: dict, chosen: dict, least: float) -> str:
    """What the export says when the first graph agreed too little and a safer one was made."""
    more = [role for role in chosen["kept_fp32"] if role not in tried["kept_fp32"]]
    return (
        f"int8 keeps {', '.join(more)} in fp32 too: with them in int8 it agreed with fp32 on "
        f"{tried['agreement']:.2%} of the check data, below --min-agreement {least:g}"
    )


def quantize_int8(fp32_file: Path, staged: Path, rows: list, keep_fp32: tuple[str, ...]) -> dict:
    """The int8 graph of `fp32_file`, written as the bundle's model: the projections of the roles
    `keep_fp32` stay fp32, with the attention's activation products; every other encoder
    projection's input is smoothed, then quantised. Returns what was done, for the export record."""
    roles = projection_roles(fp32_file)
    kept = [role for role in keep_fp32 if roles[role]]
    smoothed_roles = [role for role in ROLES if role not in kept and role != "head" and roles[role]]
    smoothed_file = staged / SMOOTHED_FILE
    smoothed = smooth_graph(fp32_file, smoothed_file, rows, [n for role in smoothed_roles for n in roles[role]])
    keep = activation_matmuls(fp32_file) + [n for role in kept for n in roles[role]]
    try:
        quantize_static(smoothed_file, staged / ONNX_FILE, rows, keep)
    finally:
        smoothed_file.unlink(missing_ok=True)
    return {
        "smoothed": {"roles": smoothed_roles, "inputs": smoothed, "alpha": ALPHA},
        "kept_fp32": {role: len(roles[role]) for role in kept},
        "quantised": sum(len(names) for role, names in roles.items() if role not in kept),
    }


def refuse_disagreement(found: dict, data, least: float) -> None:
    """An int8 graph whose predictions agree with fp32's on less than `least` of the check data is
    not published (the export stops, its staged folder removed): a user exporting to save money
    would otherwise get one answer in twenty changed, and learn it from the report alone."""
    agreement = found.get("agreement")
    if agreement is None or agreement >= least:
        return
    raise BertkitError(
        f"int8 agrees with fp32 on {agreement:.2%} of {found.get('records')} records of {data}, below "
        f"--min-agreement {least:g}: nothing was written. Export fp32 (leave --quantize out), or give a lower "
        "--min-agreement to keep this int8 export"
    )


def summary_rows(record: dict) -> list[tuple[str, str]]:
    """The export's check as rows of a two-column table."""
    check = record["check"]
    fp32 = check["fp32"]
    rows = [
        ("precision", record["precision"]),
        (
            "fp32 vs PyTorch, max |diff|",
            f"{fp32['max_abs_diff']:.2e} (allowed {fp32['allowed']:.2e}, {fp32['texts']} texts)",
        ),
    ]
    int8 = check.get("int8") or {}
    if "equal_predictions" in int8:
        rows.append(("int8 = fp32 predictions", f"{int8['equal_predictions']:.1%} of {int8['records']} records"))
    elif "agreement" in int8:
        rows.append(("int8 vectors at cosine >= 0.99", f"{int8['agreement']:.1%} of {int8['records']} records"))
    if "cosine_min" in int8:
        rows.append(("int8 vs fp32 cosine", f"min {int8['cosine_min']:.5f}, mean {int8['cosine_mean']:.5f}"))
    if "metric" in int8:
        rows.append((f"{int8['metric']} fp32 → int8", f"{int8['fp32']:.4f} → {int8['int8']:.4f}"))
    if check.get("data"):
        role = check.get("data_role")
        named = {"validation": "validation", "test": "test", "train": "training"}
        whose = f" (the bundle's {named[role]} file)" if role in named else " (--check-data)" if role else ""
        rows.append(("checked on", check["data"] + whose))
    return rows

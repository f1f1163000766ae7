"""Batched inference shared by predict, evaluate and training's final scoring.

Inputs are processed in chunks (constant memory on any input size); inside a chunk, features are
sorted by length so each batch pads little, and results come back in input order.

A text's result is a function of the text alone, byte for byte, whatever else is in its call (so
`serve`, which batches concurrent requests, answers exactly what `predict` writes). onnxruntime's
CPU kernels give each row the same bits at any batch size and padded length (its GEMMs reduce
every row in the same order; padding adds exact zeros), so ONNX bundles are batched as they come.
PyTorch's CPU GEMMs (MKL, oneDNN) do not: the same text's logits differ in the last bits (up to
3e-8 on MiniLM) alone, in batches of other sizes, or padded to another length, even on one
thread. They do give a row the same bits in batches of one shape, whatever the other rows hold.
So on a CPU a PyTorch model runs `fixed_shapes`: each feature padded to a length that depends on
its own length alone (`bucket_length`), in batches of a number of rows that depends on that
length alone (`bucket_rows`), filled up with copies when a bucket runs short. It costs about 5%
against plain length-sorted batches (600 SST-2 sentences on MiniLM: 19.8 s against 18.1 s), where
running each feature alone cost 2.2x. A GPU gets no such promise (cuBLAS makes none either way,
see docs/reliability.md).

On a CUDA GPU the aim is throughput (docs/benchmarks.md, "GPU"): the model runs in half precision
unless asked otherwise (`precision_for`: bf16 where the GPU has it, else fp16), batches are
length-sorted and sized by tokens (`token_batches`: GPU_BATCH_TOKENS positions each) rather than
by rows, inputs go up through pinned memory, and outputs stay on the GPU until the call's last
batch has been queued, so the host pads batch i+1 while the GPU runs batch i instead of waiting
for each batch's results.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable, Iterator
from itertools import chain, islice

import numpy as np

from bertkit.core import sharding
from bertkit.core.errors import BertkitError

BUCKET_STEP = 8  # a feature is padded to the next multiple of this (bucket_length)
BUCKET_TOKENS = 1024  # a fixed-shape batch holds about this many token positions (bucket_rows)
BUCKET_MAX_ROWS = 64
GPU_BATCH_TOKENS = 16_384  # a CUDA batch holds about this many token positions (token_batches)
PRECISIONS = ("auto", "fp32", "bf16", "fp16")


def pick_device(name: str | None = None):
    """The torch device `--device` names (checked to exist here), else a GPU if there is one."""
    import torch

    return _own_gpu(_named_device(name, torch), torch)


def _named_device(name: str | None, torch):

    if name:
        try:
            device = torch.device(name)
        except RuntimeError:
            raise BertkitError(f"--device {name}: not a device; give cpu, cuda, cuda:1, mps, ...") from None
        count = torch.cuda.device_count() if torch.cuda.is_available() else 0
        if device.type == "cuda" and (device.index or 0) >= count:
            seen = f"{count} CUDA GPU(s)" if count else "no CUDA GPU"
            raise BertkitError(f"--device {name}: this machine has {seen}; use --device cpu, or leave --device out")
        if device.type == "mps" and not torch.backends.mps.is_available():
            raise BertkitError(f"--device {name}: MPS is not available here; use --device cpu, or leave --device out")
        return device
    if torch.cuda.is_available():
        return torch.device("cuda")
    return torch.device("cpu")


def _own_gpu(device, torch):
    """Under a launcher (torchrun, accelerate launch), a GPU named without its number ("cuda", or
    none named) is this process's own: the machine's GPU number LOCAL_RANK."""

    local = sharding.local_rank()
    if local is None or device.type != "cuda" or device.index is not None:
        return device
    count = torch.cuda.device_count()
    if local >= count:
        raise BertkitError(
            f"process LOCAL_RANK={local} but this machine has {count} CUDA GPU(s): start at most {count} "
            "processes per machine (--nproc_per_node / --num_processes), or give --device cpu"
        )
    return torch.device("cuda", local)


def chunks(items: Iterable, size: int) -> Iterator[list]:
    iterator = iter(items)
    while chunk := list(islice(iterator, size)):
        yield chunk


def forward(model, tokenizer, features: list[dict], batch_size: int, output: Callable = None) -> list:
    """Run `model` over tokenized `features` (dicts of id lists); one result per feature, in order.

    `model` is a PyTorch model or an `onnx_runtime.OnnxModel` (whose inputs and outputs are numpy
    arrays, and which never needs torch). `output(out, inputs, rows)` turns the model's output for
    a batch (with the padded inputs and the batch's feature dicts) into an array (a tensor or a
    numpy array) with one row per feature, or a list of per-feature results (default: the logits).
    How batches are formed depends on the device (`batching`); `batch_size` counts the rows of
    ONNX and MPS batches.
    """
    if not features:
        return []
    onnx = getattr(model, "runtime", None) == "onnx"
    names = [n for n in tokenizer.model_input_names if n in features[0]]
    order = sorted(range(len(features)), key=lambda i: -len(features[i]["input_ids"]))
    results: list = [None] * len(features)
    get = output or (lambda out, inputs, rows: out.logits)
    if onnx:
        device, context = None, contextlib.nullcontext()
    else:
        import torch

        device, context = next(model.parameters()).device, torch.inference_mode()
    style = batching(device)
    multiple = 8 if style == "tokens" else None
    if style == "fixed":
        positions = getattr(getattr(model, "config", None), "max_position_embeddings", None)
        batches = fixed_shapes(features, order, positions)
    elif style == "tokens":
        batches = [(b, None) for b in token_batches(features, order, GPU_BATCH_TOKENS, multiple)]
    else:
        batches = [(b, None) for b in chunks(order, batch_size)]
    # evaluate under a launcher: this process runs every N-th batch, the others' rows are gathered
    share = sharding.forward_share()
    mine = batches if share is None else batches[share.rank :: share.size]
    landing = []  # (batch, its values: a list, an array, or a tensor on its way to the host)
    with context:
        for batch, shape in mine:
            rows = [features[i] for i in batch]
            if shape is not None:  # filled up to the bucket's rows, padded to its length
                rows += [rows[0]] * (shape[0] - len(rows))
            padded = pad_batch(tokenizer, rows, names, shape[1] if shape is not None else None, multiple)
            inputs = padded if onnx else to_device(padded, device)
            got = get(model(**inputs), inputs, rows)
            landing.append((batch, got if isinstance(got, list) else to_host(got)))
    if device is not None and device.type == "cuda":
        import torch

        torch.cuda.synchronize(device)  # the copies to the host are done
    for batch, got in landing:
        values = got if isinstance(got, list) else to_numpy(got)
        for row, index in enumerate(batch):
            results[index] = values[row]
    if share is not None:
        rows = [(index, results[index]) for batch, _ in mine for index in batch]
        for theirs in sharding.gather(share, rows, "while scoring"):
            for index, value in theirs:
                results[index] = value
    return results


def batching(device) -> str:
    """How `forward` forms batches on `device` (None: an ONNX model): "fixed" on a CPU (shapes a
    feature's own length decides: bit-stable results, see the module), "tokens" on a CUDA GPU
    (`token_batches`), "rows" elsewhere (ONNX, MPS: `batch_size` rows of the length-sorted order)."""
    if device is None:
        return "rows"
    return {"cpu": "fixed", "cuda": "tokens"}.get(device.type, "rows")


def token_batches(features: list[dict], order: list[int], tokens: int, multiple: int | None = 8) -> list[list[int]]:
    """`order` (longest first) cut into batches of about `tokens` padded positions each: a batch
    takes as many rows as fit at the padded length of its first, longest feature (at least one)."""
    batches, start = [], 0
    while start < len(order):
        longest = len(features[order[start]]["input_ids"])
        width = -(-longest // multiple) * multiple if multiple else longest
        rows = max(1, tokens // max(1, width))
        batches.append(order[start : start + rows])
        start += rows
    return batches


def pad_batch(tokenizer, rows: list[dict], names: list[str], length: int | None = None, multiple: int | None = None):
    """`rows`' fields `names` as int64 arrays of one padded length, as `tokenizer.pad` gives them
    (`length`: that length, else the longest row's, rounded up to `multiple`), about six times
    faster (256 SST-2 rows: 7 ms against 43 ms on a loaded 2-core CPU): on a GPU, padding is host
    work on the critical path. A field whose padding value is not known here goes through
    `tokenizer.pad`."""
    values = {
        "input_ids": tokenizer.pad_token_id,
        "token_type_ids": getattr(tokenizer, "pad_token_type_id", 0),
        "attention_mask": 0,
        "special_tokens_mask": 1,
    }
    if any(values.get(name) is None for name in names):
        padding = {"padding": "max_length", "max_length": length} if length is not None else {}
        shown = tokenizer.pad([{n: r[n] for n in names} for r in rows], return_tensors="np",
                              pad_to_multiple_of=multiple, **padding)  # fmt: skip
        return {name: np.asarray(shown[name], dtype=np.int64) for name in names}
    width = length or max(len(row["input_ids"]) for row in rows)
    if length is None and multiple:
        width = -(-width // multiple) * multiple
    lengths = np.fromiter((len(row["input_ids"]) for row in rows), dtype=np.int64, count=len(rows))
    positions = np.arange(width)
    if getattr(tokenizer, "padding_side", "right") == "left":
        filled = positions >= (width - lengths)[:, None]
    else:
        filled = positions < lengths[:, None]
    padded = {}
    for name in names:
        array = np.full((len(rows), width), values[name], dtype=np.int64)
        # row-major: the filled places take the rows' values one row after another
        array[filled] = np.fromiter(chain.from_iterable(row[name] for row in rows), dtype=np.int64, count=filled.sum())
        padded[name] = array
    return padded


def to_device(padded: dict, device) -> dict:
    """Padded arrays as tensors on `device`; to a CUDA GPU through pinned memory, without waiting."""
    import torch

    if device.type != "cuda":
        return {name: torch.from_numpy(array).to(device) for name, array in padded.items()}
    return {name: torch.from_numpy(array).pin_memory().to(device, non_blocking=True) for name, array in padded.items()}


def to_host(values):
    """A batch's output on its way to the host: a tensor on a GPU is copied without waiting (into
    pinned memory; `forward` synchronises once, after the last batch); any other as a numpy array."""
    if isinstance(values, np.ndarray) or values.device.type != "cuda":
        return to_numpy(values)
    values = values.detach()
    return (values.float() if values.is_floating_point() else values).to("cpu", non_blocking=True)


def precision_for(choice: str, device) -> str:
    """The precision a PyTorch model runs in on `device` when `choice` (`--precision`) is asked:
    `auto` is half precision on a CUDA GPU (`gpu_half`) and fp32 elsewhere; fp32, bf16 and fp16 are
    taken as asked (on a CPU, half precision is slower unless it has bf16 instructions)."""

    if choice not in PRECISIONS:
        raise BertkitError(f"--precision {choice}: use one of {', '.join(PRECISIONS)}")
    cuda = getattr(device, "type", device) == "cuda"
    if choice == "auto":
        return gpu_half() if cuda else "fp32"
    if choice == "bf16" and cuda and gpu_half() != "bf16":
        raise BertkitError("--precision bf16: this GPU has no bf16 arithmetic; use --precision fp16 or fp32")
    return choice


def gpu_half() -> str:
    """The half precision of this machine's CUDA GPU: bf16 where it has it (Ampere and later), else fp16."""
    import torch

    return "bf16" if torch.cuda.is_bf16_supported() else "fp16"


def in_precision(model, precision: str):
    """`model` with its weights in `precision` (fp32: as loaded)."""
    if precision == "fp32":
        return model
    import torch

    return model.to({"bf16": torch.bfloat16, "fp16": torch.float16}[precision])


def bucket_length(length: int, positions: int | None = None) -> int:
    """The padded length of a feature of `length` tokens in a fixed-shape batch: the next multiple
    of BUCKET_STEP, never past the model's positions."""
    padded = -(-length // BUCKET_STEP) * BUCKET_STEP
    return max(length, min(padded, positions)) if positions else padded


def bucket_rows(length: int) -> int:
    """The rows of every fixed-shape batch of padded `length`."""
    return max(1, min(BUCKET_MAX_ROWS, BUCKET_TOKENS // length))


def fixed_shapes(features: list[dict], order: list[int], positions: int | None = None) -> list[tuple]:
    """`order`'s features in batches whose shape (rows, length) depends only on the length of the
    features they hold, so that a feature's result does not depend on its batch-mates: each
    feature goes to the bucket of its own padded length, and each bucket is cut into batches of
    that bucket's rows (the last one filled up by the caller)."""
    buckets: dict[int, list[int]] = {}
    for index in order:
        buckets.setdefault(bucket_length(len(features[index]["input_ids"]), positions), []).append(index)
    return [
        (batch, (bucket_rows(length), length))
        for length, members in buckets.items()
        for batch in chunks(members, bucket_rows(length))
    ]


def to_numpy(values) -> np.ndarray:
    """A tensor (any device, any float type) or an array as a numpy array."""
    if isinstance(values, np.ndarray):
        return values
    return values.float().cpu().numpy() if values.is_floating_point() else values.cpu().numpy()


def empty_record(record: dict, text_column: str | None = "text", **fields) -> dict:
    """The result for an empty input: its id and text as given, `fields` (the task's prediction
    fields, null), and `"empty": true`."""
    out = {k: record[k] for k in ("id",) if k in record}
    if text_column:
        out["text"] = record.get(text_column)
    return {**out, **fields, "empty": True}


def padding_efficiency(lengths: list[int], batch_size: int, sort: bool = True) -> float:
    """Real tokens / computed tokens when `lengths` are batched (sorted or not) and padded per batch."""
    values = sorted(lengths, reverse=True) if sort else list(lengths)
    computed = sum(max(b) * len(b) for b in chunks(values, batch_size))
    return sum(values) / computed if computed else 1.0


def softmax(logits: np.ndarray) -> np.ndarray:
    shifted = logits - logits.max(axis=-1, keepdims=True)
    exp = np.exp(shifted)
    return exp / exp.sum(axis=-1, keepdims=True)


def sigmoid(logits: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-logits))

"""SmoothQuant for the int8 graph: moving the activations' outlier channels into the weights.

A few channels of a BERT layer's activations are far larger than the rest (MiniLM's LayerNorm
outputs: one channel up to 30 where most stay under 2). One int8 scale per activation tensor is
sized by them, which leaves the other channels a handful of steps each. SmoothQuant (Xiao et al.,
2023) divides each input channel j of a projection by s_j and multiplies the weight's row j by
the same s_j: the product is unchanged in exact arithmetic, and with
s_j = max|x_j|^alpha / max|w_j|^(1 - alpha) the channels' ranges come closer together, the
weights (quantised one scale per output channel) taking up part of the spread.

Here the division is a Mul node in front of the projections (one for the projections that share
an input: query, key and value), so the graph stays equivalent to the fp32 one before int8
(`smooth_graph` checks it); the channel maxima come from the calibration rows.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from bertkit.core.errors import BertkitError
from bertkit.exporting.calibration import feed

ALPHA = 0.5  # measured best with 0.65 and 0.8 (docs/deployment.md); the paper's value for BERT-sized models
SMALLEST = 1e-5  # a channel or weight row that is all zeros is not divided by zero
EQUIVALENT = 1e-3  # the smoothed fp32 graph's largest difference from the original's, relative


def channel_maxima(graph_file: Path, rows: list[dict[str, np.ndarray]], tensors: list[str]) -> dict[str, np.ndarray]:
    """The largest absolute value of each channel (last axis) of each of `tensors`, over `rows`
    run through the fp32 graph."""
    import onnx
    import onnxruntime

    model = onnx.load(str(graph_file))
    for name in tensors:
        model.graph.output.append(onnx.helper.make_tensor_value_info(name, onnx.TensorProto.FLOAT, None))
    session = onnxruntime.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    inputs = [i.name for i in session.get_inputs()]
    maxima: dict[str, np.ndarray] = {}
    for row in rows:
        for name, value in zip(tensors, session.run(tensors, feed(row, inputs)), strict=True):
            seen = np.abs(value.reshape(-1, value.shape[-1])).max(axis=0)
            maxima[name] = np.maximum(maxima[name], seen) if name in maxima else seen
    return maxima


def smooth_graph(
    source: Path, target: Path, rows: list[dict[str, np.ndarray]], projections: list[str], alpha: float = ALPHA
) -> int:
    """Write `source` with the inputs of the MatMul nodes named in `projections` smoothed (above)
    to `target`; returns how many inputs were smoothed. The result must give the source's outputs
    on the first calibration rows (within EQUIVALENT, relative), else the export stops."""
    import onnx
    from onnx import numpy_helper

    model = onnx.load(str(source))
    graph = model.graph
    weights = {t.name: t for t in graph.initializer}
    wanted = set(projections)
    by_input: dict[str, list] = {}
    for node in graph.node:
        if node.name in wanted and node.op_type == "MatMul" and node.input[1] in weights:
            by_input.setdefault(node.input[0], []).append(node)
    if not by_input:
        onnx.save(model, str(target))
        return 0
    maxima = channel_maxima(source, rows, list(by_input))
    for tensor, readers in by_input.items():
        matrices = [numpy_helper.to_array(weights[node.input[1]]) for node in readers]
        weight_max = np.max([np.abs(m).max(axis=1) for m in matrices], axis=0)
        scale = np.maximum(maxima[tensor], SMALLEST) ** alpha / np.maximum(weight_max, SMALLEST) ** (1 - alpha)
        scale = np.maximum(scale, SMALLEST).astype(np.float32)
        for node, matrix in zip(readers, matrices, strict=True):
            smoothed = numpy_helper.from_array((matrix * scale[:, None]).astype(np.float32), node.input[1])
            weights[node.input[1]].CopyFrom(smoothed)
        divisor, divided = f"{tensor}/smoothing", f"{tensor}/smoothed"
        graph.initializer.append(numpy_helper.from_array((1.0 / scale).astype(np.float32), divisor))
        for node in readers:
            node.input[0] = divided
        made_at = next((i for i, n in enumerate(graph.node) if tensor in n.output), -1)
        graph.node.insert(made_at + 1, onnx.helper.make_node("Mul", [tensor, divisor], [divided], name=divided))
    onnx.save(model, str(target))
    check_equivalent(source, target, rows[:8])
    return len(by_input)


def check_equivalent(source: Path, target: Path, rows: list[dict[str, np.ndarray]]) -> None:
    """Stop the export unless `target` gives `source`'s outputs on `rows` (within EQUIVALENT)."""
    import onnxruntime

    sessions = [onnxruntime.InferenceSession(str(f), providers=["CPUExecutionProvider"]) for f in (source, target)]
    inputs = [i.name for i in sessions[0].get_inputs()]
    for row in rows:
        before, after = (s.run(None, feed(row, inputs)) for s in sessions)
        for a, b in zip(before, after, strict=True):
            if np.abs(a - b).max() > EQUIVALENT * max(1.0, float(np.abs(a).max())):
                raise BertkitError(
                    "int8: the smoothed graph no longer gives the fp32 graph's outputs (largest difference "
                    f"{float(np.abs(a - b).max()):.2e}); export without --quantize, and report this model"
                )

"""Static int8 quantisation of an exported graph, calibrated on the bundle's own data.

Dynamic quantisation (what `--quantize int8` made before) computes each MatMul input's int8 scale
from the batch it is given, so a text's scores depended on the texts that shared its batch (alone
against among 200 others: scores moved by up to 0.016, sentence vectors' cosine 0.994). Here every
scale is fixed at export: the fp32 graph is run over the bundle's data, each MatMul input's range
is recorded (min and max over the real tokens), and the int8 graph quantises with those constants.
Integer products are summed exactly (int32), and quantising, dequantising and the fp32 layers
between work element by element, so a text's outputs are the same bits alone and in any batch.

The calibration inputs are what the task itself feeds the model: the task scores the data through
`Recorder`, which stands in for the fp32 graph and keeps every row it is given without its
padding (each text, pair, QA window or masked line at its own length).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from bertkit.core.errors import BertkitError
from bertkit.core.onnx_runtime import need_onnx
from bertkit.tasks.contract.options import EvaluateOptions

CALIBRATION_SAMPLE = 200  # examples the task scores to record the ranges (seeded, as evaluate samples)
METHOD = "minmax"
CALIBRATION_METHODS = {"minmax": "MinMax", "percentile": "Percentile", "entropy": "Entropy"}


class Recorder:
    """The fp32 ONNX model, keeping each row of every batch it runs (its real tokens only)."""

    runtime = "onnx"

    def __init__(self, model):
        self.model = model
        self.config = model.config
        self.output_names = model.output_names
        self.rows: list[dict[str, np.ndarray]] = []

    def __call__(self, **inputs):
        mask = np.asarray(inputs["attention_mask"])
        for row in range(mask.shape[0]):
            real = mask[row] != 0
            self.rows.append(
                {name: np.asarray(values)[row, real][None].astype(np.int64) for name, values in inputs.items()}
            )
        return self.model(**inputs)

    def eval(self) -> Recorder:
        return self


def evaluate_on_check_data(task, model, tokenizer, info, data: Path, fmt: str | None, sample: int, why: str) -> dict:
    """`task.evaluation.evaluate` of `model` on a seeded sample of the check data, read with the bundle's own
    columns; data it cannot score is an error saying what the int8 export needs (`why`: the step)."""

    options = EvaluateOptions(max_samples=sample, data_format=fmt, columns_settable=False)
    try:
        return task.evaluation.evaluate(model, tokenizer, info, str(data), options)
    except BertkitError as err:
        raise BertkitError(
            f"the int8 {why} cannot read {data}: {err} It reads labelled examples: give --check-data a labelled "
            "file in the format the bundle was trained on"
        ) from None


def record_inputs(
    task, fp32, tokenizer, info, data: Path, fmt: str | None = None, sample: int = CALIBRATION_SAMPLE
) -> list[dict[str, np.ndarray]]:
    """The model inputs the task makes of (a seeded sample of) `data`, one unpadded row each."""
    recorder = Recorder(fp32)
    evaluate_on_check_data(task, recorder, tokenizer, info, data, fmt, sample, "calibration")
    if not recorder.rows:
        raise BertkitError(f"{data}: no example to calibrate int8 on; give a file with examples as --check-data")
    return recorder.rows


def activation_matmuls(graph_file: Path) -> list[str]:
    """MatMul nodes whose two inputs are both activations (attention scores, the attention mix):
    kept in fp32, as the dynamic graph kept them."""
    import onnx

    graph = onnx.load(str(graph_file), load_external_data=False).graph
    weights = {t.name for t in graph.initializer}
    return [n.name for n in graph.node if n.op_type == "MatMul" and n.input[1] not in weights]


def quantize_static(
    source: Path, target: Path, rows: list[dict[str, np.ndarray]], keep_fp32: list[str], method: str = METHOD
) -> None:
    """onnxruntime's static quantisation (QDQ): int8 weights of the MatMul / Gemm layers, one
    scale per output channel; uint8 activations, one scale per tensor from the calibration ranges
    (`method`: minmax, percentile or entropy, as onnxruntime computes them); the nodes in
    `keep_fp32` untouched."""
    import logging


    quantization = need_onnx("--quantize int8", "onnxruntime.quantization")
    import onnxruntime

    names = [i.name for i in onnxruntime.InferenceSession(str(source), providers=["CPUExecutionProvider"]).get_inputs()]

    class Reader(quantization.CalibrationDataReader):
        def __init__(self):
            self.rows = iter(rows)

        def get_next(self):
            row = next(self.rows, None)
            if row is None:
                return None
            ids = row["input_ids"]
            return {n: row[n] if n in row else np.zeros_like(ids) for n in names}

    root = logging.getLogger()
    level = root.level
    root.setLevel(logging.ERROR)  # its advice to pre-process the graph (shape inference) changes nothing here
    try:
        quantization.quantize_static(
            str(source),
            str(target),
            Reader(),
            quant_format=quantization.QuantFormat.QDQ,
            op_types_to_quantize=["MatMul", "Gemm"],
            per_channel=True,
            activation_type=quantization.QuantType.QUInt8,
            weight_type=quantization.QuantType.QInt8,
            nodes_to_exclude=keep_fp32,
            calibrate_method=getattr(quantization.CalibrationMethod, CALIBRATION_METHODS[method]),
        )
    finally:
        root.setLevel(level)

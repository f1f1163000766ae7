"""A PyTorch bundle's model as an ONNX graph with dynamic batch and sequence axes (its int8 copy:
`calibration.py`).

The graph gives what the task's prediction reads, as the task's export part says (`outputs`,
`forward`, `per_token` in its package): classify and NER `logits` (per text, per token), QA
`start_logits` and `end_logits`, mlm-adapt the masked-LM `logits`, embed the pooled (and, when the
bundle normalises, unit-length) `sentence_embedding`.

The exporter is torch.onnx's TorchScript one (`dynamo=False`): on BERT models here it gives the
same outputs as the dynamo exporter (both within 1e-8 of PyTorch), in 0.3 s instead of 4.5 s,
as one self-contained file (the dynamo one writes the weights beside it), and it is the graph
shape onnxruntime's quantiser and transformer fusions are written for.
"""

from __future__ import annotations

from pathlib import Path

from bertkit.core.errors import BertkitError

OPSET = 17
GRAPH_INPUTS = ("input_ids", "attention_mask", "token_type_ids")


def input_names(tokenizer) -> list[str]:
    names = [n for n in tokenizer.model_input_names if n in GRAPH_INPUTS]
    if "input_ids" not in names or "attention_mask" not in names:
        raise BertkitError(
            f"this tokenizer gives {', '.join(tokenizer.model_input_names)}; an ONNX export needs input_ids and "
            "attention_mask"
        )
    return names


def wrapped(model, task, info, names: list[str]):
    """`model` as a module taking the graph's inputs positionally and giving the task's outputs
    (`task.export.forward`)."""
    import torch

    class Graph(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.model = model

        def forward(self, *inputs):
            return task.export.forward(self.model, dict(zip(names, inputs, strict=True)), info)

    return Graph().eval()


def export_graph(model, tokenizer, task, info, target: Path):
    """Write `model` (a PyTorch bundle's, in eval mode) as an fp32 ONNX graph of `task`'s outputs
    (a `bertkit.tasks.contract.Task`, whose export part says `outputs`, `per_token`, `forward`) at `target`;
    returns the graph's input names and the PyTorch module it was traced from."""
    import warnings

    import torch

    names = input_names(tokenizer)
    sample = tokenizer(
        ["a short text", "a somewhat longer text to pad the first one"], padding=True, return_tensors="pt"
    )
    graph = wrapped(model, task, info, names)
    axes = {name: {0: "batch", 1: "sequence"} for name in names}
    for name in task.export.outputs:
        axes[name] = {0: "batch", 1: "sequence"} if task.export.per_token else {0: "batch"}
    with warnings.catch_warnings(), torch.inference_mode(False), torch.no_grad():
        warnings.simplefilter("ignore")  # tracer warnings about Python values in the model's code
        torch.onnx.export(
            graph,
            tuple(sample[n] for n in names),
            str(target),
            input_names=names,
            output_names=list(task.export.outputs),
            dynamic_axes=axes,
            opset_version=OPSET,
            do_constant_folding=True,
            dynamo=False,
        )
    graph.eval()  # the exporter puts the module back in the mode it found it in: keep dropout off
    return names, graph


# The roles of an encoder's weight projections, as `projection_roles` finds them by the graph's shape
ROLES = ("attention-in", "attention-out", "ffn-in", "ffn-out", "head")
# the last operation of an activation as the exporter writes it: GELU's erf form ends in a Mul, as
# does a gated unit; a fused GELU or a ReLU is one node
ACTIVATIONS = ("Mul", "Gelu", "FastGelu", "Relu", "Erf", "Tanh", "Sigmoid")


def projection_roles(graph_file: Path) -> dict[str, list[str]]:
    """The graph's weight projections (MatMul or Gemm with a constant 2-D weight) by role, found by
    their place and shape rather than their names, so that every family's encoder (BERT, RoBERTa,
    DistilBERT, ELECTRA, MPNet, ModernBERT...) is read alike:

    - `head`: after the encoder's last residual LayerNormalization (the pooler, the classifier,
      the masked-LM head's transform and decoder);
    - `ffn-out`: one reading an activation's product (the feed-forward's second: GELU's, or a
      gated unit's);
    - `ffn-in`: one that widens (the feed-forward's first; a fused query-key-value one too);
    - `attention-in`: one reading a LayerNormalization's output, or an input other projections
      read too (query, key and value; ELECTRA's embedding projection);
    - `attention-out`: the rest: one alone on the attention's mix of values.
    """
    import onnx

    graph = onnx.load(str(graph_file), load_external_data=False).graph
    shapes = {t.name: tuple(t.dims) for t in graph.initializer}

    def weight_shape(node) -> tuple[int, int] | None:
        """(inputs, outputs) of a projection's weight, or None for a node that is not one."""
        if node.op_type not in ("MatMul", "Gemm") or len(shapes.get(node.input[1], ())) != 2:
            return None
        rows, columns = shapes[node.input[1]]
        transposed = node.op_type == "Gemm" and any(a.name == "transB" and a.i for a in node.attribute)
        return (columns, rows) if transposed else (rows, columns)

    projections = [(i, node, weight_shape(node)) for i, node in enumerate(graph.node) if weight_shape(node)]
    producer = {out: node.op_type for node in graph.node for out in node.output}
    readers: dict[str, int] = {}
    for _, node, _ in projections:
        readers[node.input[0]] = readers.get(node.input[0], 0) + 1
    # the encoder ends at its last residual LayerNormalization (one of a sum); a head's own
    # LayerNormalization (the masked-LM head's, after its GELU) does not end it
    norms = [(i, n) for i, n in enumerate(graph.node) if n.op_type == "LayerNormalization"]
    sums = [i for i, n in norms if producer.get(n.input[0]) == "Add"]
    last_norm = sums[-1] if sums else -1
    roles: dict[str, list[str]] = {role: [] for role in ROLES}
    for index, node, (width_in, width_out) in projections:
        made_by = producer.get(node.input[0])
        if index > last_norm:
            role = "head"
        elif made_by in ACTIVATIONS:
            role = "ffn-out"
        elif width_out > width_in:
            role = "ffn-in"
        elif made_by == "LayerNormalization" or readers[node.input[0]] > 1:
            role = "attention-in"
        else:
            role = "attention-out"
        roles[role].append(node.name)
    return roles

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


def residual_projections(graph_file: Path) -> list[str]:
    """The MatMul nodes that project back into the residual stream: a constant weight, then the
    bias Add, the residual Add and a LayerNormalization (a post-LN encoder layer's attention output
    and feed-forward output; found by the graph's shape, so BERT, RoBERTa, DistilBERT and ELECTRA
    alike). Their inputs (the attention mix and the GELU output) have the widest ranges in the
    model, so one int8 scale for all of them loses the most there: an embed graph keeps them in fp32
    (MiniLM's minimum cosine with fp32 over 300 SST-2 and IMDb texts: 0.982 with them in int8,
    0.991 without, measured with dynamic quantisation; docs/deployment.md)."""
    import onnx

    graph = onnx.load(str(graph_file), load_external_data=False).graph
    constants = {t.name for t in graph.initializer}
    readers: dict[str, list] = {}
    for node in graph.node:
        for name in node.input:
            readers.setdefault(name, []).append(node)

    def only_reader(node, op: str):
        found = readers.get(node.output[0], [])
        return found[0] if len(found) == 1 and found[0].op_type == op else None

    kept = []
    for node in graph.node:
        if node.op_type != "MatMul" or node.input[1] not in constants:
            continue
        bias = only_reader(node, "Add")
        residual = bias and only_reader(bias, "Add")
        if residual and only_reader(residual, "LayerNormalization"):
            kept.append(node.name)
    return kept

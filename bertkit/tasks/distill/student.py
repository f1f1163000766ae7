"""The student's start: some of its encoder layers kept (as DistilBERT initialised its student
from every other layer of BERT), and its vocabulary checked against the teacher's."""

from __future__ import annotations

from bertkit.core.errors import BertkitError
from bertkit.core.tokenization import load_tokenizer

# where encoder families keep their stack of layers, below the base model
LAYER_STACKS = (("encoder", "layer"), ("transformer", "layer"), ("encoder", "layers"), ("layers",))


def layer_stack(model):
    """(the module holding the layers, the attribute name, the layers)."""
    base = model.base_model
    for path in LAYER_STACKS:
        holder = base
        for name in path[:-1]:
            holder = getattr(holder, name, None)
        layers = getattr(holder, path[-1], None) if holder is not None else None
        if layers is not None and hasattr(layers, "__len__"):
            return holder, path[-1], layers
    raise BertkitError(f"distill.student_layers: cannot find the encoder layers of {type(model).__name__}")


def check_layers(layers: list[int] | None, count: int, start: str) -> None:
    if layers is None:
        return
    outside = [i for i in layers if i >= count]
    if outside:
        raise BertkitError(
            f"distill.student_layers: {outside} out of range: {start} has {count} layers, numbered 0 to {count - 1}"
        )


def layer_count(source: str, trust_remote_code: bool = False) -> int:
    from transformers import AutoConfig

    config = AutoConfig.from_pretrained(source, trust_remote_code=trust_remote_code)
    count = getattr(config, "num_hidden_layers", None)
    if count is None:
        raise BertkitError(f"distill.student_layers: {source}'s config does not say how many layers it has")
    return int(count)


def keep_layers(model, layers: list[int] | None, start: str):
    """`model` with only the encoder layers `layers` (in that order), their weights as they
    were; the config says the new depth, so the saved student loads as it is."""
    import torch

    if layers is None:
        return model
    holder, name, stack = layer_stack(model)
    check_layers(layers, len(stack), start)
    kept = torch.nn.ModuleList([stack[i] for i in layers])
    setattr(holder, name, kept)
    for position, layer in enumerate(kept):
        for module in layer.modules():
            if hasattr(module, "layer_idx"):
                module.layer_idx = position
    model.config.num_hidden_layers = len(layers)
    types = getattr(model.config, "layer_types", None)
    if isinstance(types, list) and len(types) == len(stack):
        model.config.layer_types = [types[i] for i in layers]
    return model


def check_vocabulary(teacher_tokenizer, start: str, teacher: str, revision=None, trusted=False) -> None:
    """A student must read the teacher's tokens: a start whose vocabulary differs is refused
    (its embeddings would be looked up with ids that mean other words)."""

    theirs = load_tokenizer(start, revision, trusted)
    if theirs.get_vocab() != teacher_tokenizer.get_vocab():
        raise BertkitError(
            f"model.name: {start}'s vocabulary is not the teacher's ({teacher}). The student reads the teacher's "
            "tokens: start from the teacher (leave model.name out, with distill.student_layers) or from a model "
            "with the same tokenizer"
        )

"""Options that several commands share, written once so their names, defaults and help agree."""

from __future__ import annotations

import typer

# the largest whole number an option takes (bertkit/core/settings.py's INT_LIMIT, written out so that
# `bertkit --help` imports no settings): a larger count ended in a library's traceback
COUNT_LIMIT = 2**31 - 1

ConfigOption = typer.Option(..., "--config", "-c", help="YAML config file describing the run.")
TrustOption = typer.Option(
    False,
    "--trust-remote-code",
    help="Allow a model that ships its own Python code to run it (only for models you trust; never asked).",
)
ColumnsOption = typer.Option(
    None,
    "--columns",
    help="Names of a CSV/TSV file's columns when it has no header row, in order: e.g. label,title,description.",
)
EncodingOption = typer.Option("utf-8", "--encoding", help="The input file's text encoding, e.g. latin-1.")


def column_names(value: str | None) -> tuple[str, ...] | None:
    """`--columns a,b,c` as names; an empty or repeated name is an error."""
    from bertkit.core.errors import BertkitError
    from bertkit.core.settings import named_columns

    if value is None:
        return None
    names = [name.strip() for name in value.split(",")]
    try:
        named_columns(names)
    except ValueError as err:
        raise BertkitError(f"--columns {value}: {err}") from None
    return tuple(names)


def encoding_name(value: str) -> str:
    from bertkit.core.errors import BertkitError
    from bertkit.core.settings import known_encoding

    try:
        return known_encoding(value)
    except ValueError as err:
        raise BertkitError(f"--encoding {value}: {err}") from None


def model_options(kind: str, text_column, text_pair_column, batch_size: int, columns, encoding: str, **more):
    """The typed options (`predict`: `PredictOptions`, `evaluate`: `EvaluateOptions`) of a command
    that runs a model, from its arguments: the fields every such command shares, --columns and
    --encoding checked, and the command's own (`more`)."""
    from bertkit.tasks.contract.options import EvaluateOptions, PredictOptions

    made = {"predict": PredictOptions, "evaluate": EvaluateOptions}[kind]
    shared = dict(text_column=text_column, text_pair_column=text_pair_column, batch_size=batch_size)
    return made(**shared, columns=column_names(columns), encoding=encoding_name(encoding), **more)


SetOption = typer.Option(None, "--set", "-s", help="Override a config key, e.g. --set train.epochs=1 (repeatable).")

# ---------------------------------------------------------------- embeddings

ModelOption = typer.Option(
    ..., "--model", "-m", help="Any BERT-family model: a bertkit bundle, a HF model folder or a hub id."
)
PoolingOption = typer.Option(None, "--pooling", help="mean, cls, max or pooler (default: the model's own, else mean).")
NormalizeOption = typer.Option(
    None, "--normalize/--no-normalize", help="L2-normalise the vectors (default: as the model says, else no)."
)
MaxLengthOption = typer.Option(
    None, "--max-length", min=8, help="Cut texts to this many tokens (default: the model's)."
)
BatchOption = typer.Option(32, "--batch-size", "-b", min=1, max=COUNT_LIMIT, help="Texts per forward pass.")
MaxSamplesOption = typer.Option(
    None, "--max-samples", min=1, help="Score a seeded sample of at most this many examples (default: all)."
)
DeviceOption = typer.Option(None, "--device", help="cpu, cuda, ... (default: a GPU if there is one).")
PrecisionOption = typer.Option(
    "auto",
    "--precision",
    help="auto (bf16 on a GPU that has it, else fp16 on a GPU; fp32 on a CPU), fp32, bf16 or fp16.",
)
TextColumnOption = typer.Option("text", "--text-column", help="Field holding the text in CSV/JSON inputs.")
CacheDirOption = typer.Option(
    None,
    "--cache-dir",
    help="Where corpus embeddings are kept (default: search/ in $BERTKIT_CACHE, else in ~/.cache/bertkit).",
)
NoCacheOption = typer.Option(False, "--no-cache", help="Embed the corpus afresh and keep nothing.")

# ---------------------------------------------------------------- ONNX bundles

RuntimeOption = typer.Option(
    "auto",
    "--runtime",
    help="auto (onnx for a bundle made by `bertkit export`, else torch), torch or onnx.",
)

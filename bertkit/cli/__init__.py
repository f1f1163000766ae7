"""The `bertkit` command line. Each command is thin: it parses options and imports the heavy
modules (torch, transformers) inside its body, so `bertkit --help` stays instant."""

from __future__ import annotations

import contextlib
import sys
from pathlib import Path

import typer

from bertkit import __version__
from bertkit.errors import BertkitError

app = typer.Typer(
    name="bertkit",
    help="Fine-tune and run BERT-family models: train, evaluate, predict.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)
train_app = typer.Typer(help="Fine-tune a model from a YAML config.", no_args_is_help=True)
config_app = typer.Typer(help="Show or start a config file.", no_args_is_help=True)
tokenizer_app = typer.Typer(help="Build a WordPiece tokenizer from your own text.", no_args_is_help=True)
app.add_typer(train_app, name="train")
app.add_typer(config_app, name="config")
app.add_typer(tokenizer_app, name="tokenizer")

ConfigOption = typer.Option(..., "--config", "-c", help="YAML config file describing the run.")
TrustOption = typer.Option(
    False,
    "--trust-remote-code",
    help="Allow a model that ships its own Python code to run it (only for models you trust; never asked).",
)
SetOption = typer.Option(None, "--set", "-s", help="Override a config key, e.g. --set train.epochs=1 (repeatable).")


def _show_version(value: bool) -> None:
    if value:
        typer.echo(f"bertkit {__version__}")
        raise typer.Exit()


@app.callback()
def root(
    version: bool = typer.Option(
        False, "--version", callback=_show_version, is_eager=True, help="Print the version and exit."
    ),
    offline: bool = typer.Option(False, "--offline", help="Never touch the network (same as HF_HUB_OFFLINE=1)."),
) -> None:
    if offline:
        from bertkit.hub import go_offline

        go_offline()


# ---------------------------------------------------------------- train


def _register_train_command(task: str, summary: str) -> None:
    def command(
        config: Path = ConfigOption,
        set_: list[str] | None = SetOption,
        output_dir: str | None = typer.Option(
            None, "--output-dir", "-o", help="Where the model bundle goes (overrides output_dir)."
        ),
        overwrite: bool = typer.Option(False, "--overwrite", help="Replace an existing output directory."),
        resume: bool = typer.Option(False, "--resume", help="Continue an interrupted run from its last checkpoint."),
        trust_remote_code: bool = TrustOption,
    ) -> None:
        _train(task, config, set_, output_dir, overwrite, resume, trust_remote_code)

    train_app.command(task, help=summary)(command)


def _sync_train_commands() -> None:
    """One `bertkit train NAME` per registered task (tasks registered later get theirs too)."""
    from bertkit.tasks import registry

    known = {info.name for info in train_app.registered_commands}
    for item in registry.records():
        if item.name not in known:
            _register_train_command(item.name, item.summary)


_sync_train_commands()


def _train(task: str, config: Path, sets, output_dir, overwrite: bool, resume: bool, trust: bool = False) -> None:
    from bertkit.config import load_config

    extra = {"model.trust_remote_code": True} if trust else {}
    cfg = load_config(config, sets, task=task, output_dir=output_dir, **extra)
    from bertkit import training
    from bertkit.progress import console

    final, scores = training.train(cfg, overwrite=overwrite, resume=resume, protect=[config])
    if training.is_main_process():
        _print_metrics(scores)
        console.print(f"[green]model saved to[/green] {final}")


def _print_metrics(data: dict) -> None:
    from rich.table import Table

    table = Table(title="metrics", show_header=True)
    roles = [r for r in ("validation", "test") if r in data]
    table.add_column("metric")
    for role in roles:
        table.add_column(role, justify="right")
    names = [k for k, v in data[roles[0]].items() if isinstance(v, float)] if roles else []
    for name in names:
        table.add_row(name, *[f"{data[r].get(name, float('nan')):.4f}" for r in roles])
    # to stdout: the one result a script may want to capture
    from rich.console import Console

    Console().print(table)


# ---------------------------------------------------------------- predict / evaluate


@app.command()
def predict(
    model: str = typer.Option(..., "--model", "-m", help="Model bundle (or any HF model directory)."),
    input: str | None = typer.Option(
        None,
        "--input",
        "-i",
        help="Text lines, CSV/TSV/JSONL/JSON/Parquet, CoNLL or SQuAD JSON file, or - for stdin.",
    ),
    output: str | None = typer.Option(None, "--output", "-o", help="Where to write results (stdout when absent)."),
    format: str | None = typer.Option(
        None,
        "--format",
        "-f",
        help="jsonl, csv, tsv or conll (default: from --output's extension; conll for CoNLL input; else jsonl).",
    ),
    input_format: str | None = typer.Option(
        None, "--input-format", help="text, csv, tsv, jsonl, json, parquet or conll, when the extension does not say."
    ),
    text_column: str | None = typer.Option(
        None, "--text-column", help="Field holding the text (default: the one the model was trained on)."
    ),
    text_pair_column: str | None = typer.Option(
        None, "--text-pair-column", help="Field holding the second text of a pair."
    ),
    batch_size: int = typer.Option(32, "--batch-size", "-b", min=1, help="Texts per forward pass."),
    long_text: str = typer.Option(
        "truncate", "--long-text", help="truncate: cut as in training; windows: score overlapping windows and average."
    ),
    stride: int | None = typer.Option(
        None,
        "--stride",
        min=0,
        help="Tokens shared by consecutive windows (--long-text windows; default: a quarter of a window).",
    ),
    threshold: float | None = typer.Option(
        None, "--threshold", help="Multi-label: score above which a label is on (default: the model's)."
    ),
    device: str | None = typer.Option(
        None, "--device", help="cpu, cuda, cuda:1, ... (default: a GPU if there is one)."
    ),
    question: str | None = typer.Option(
        None, "--question", "-q", help="QA: ask this question of --context-file (instead of --input)."
    ),
    context_file: Path | None = typer.Option(
        None, "--context-file", help="QA: a UTF-8 text file of any length to find the --question's answer in."
    ),
    n_best: int = typer.Option(0, "--n-best", min=0, help="QA: also list this many alternative answers."),
    top_k: int | None = typer.Option(
        None, "--top-k", min=1, help="Fill-mask: candidates per [MASK] (default: the model's, 5)."
    ),
    trust_remote_code: bool = TrustOption,
) -> None:
    """Run a trained model on texts; one result per input line or record, in input order (a blank
    line gets an empty result)."""
    if long_text not in ("truncate", "windows"):
        raise BertkitError("--long-text: use truncate or windows")
    records = None
    if (question is None) != (context_file is None):
        raise BertkitError("--question and --context-file go together: give both, or neither and --input")
    if question is not None:
        if input is not None:
            raise BertkitError("give --input, or --question with --context-file, not both")
        records = [{"question": question, "context": _read_text(context_file)}]
        input = str(context_file)
    elif input is None:
        raise BertkitError("nothing to predict: give --input FILE (or - for stdin), or --question with --context-file")
    from bertkit.prediction import predict_file

    count = predict_file(
        model,
        input,
        output,
        format,
        input_format,
        device,
        records=records,
        trust_remote_code=trust_remote_code,
        n_best=n_best,
        top_k=top_k,
        text_column=text_column,
        text_pair_column=text_pair_column,
        batch_size=batch_size,
        long_text=long_text,
        stride=stride,
        threshold=threshold,
    )
    if output:
        from bertkit.progress import console

        console.print(f"[green]{count:,} predictions written to[/green] {output}")


def _read_text(path: Path) -> str:
    if path.is_dir():
        raise BertkitError(f"--context-file {path} is a directory; give the text file to find the answer in")
    if not path.is_file():
        raise BertkitError(f"--context-file {path}: no such file")
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as err:
        raise BertkitError(f"{path}: not UTF-8 text ({err.reason} at byte {err.start})") from None
    if not text.strip():
        raise BertkitError(f"--context-file {path} is empty: there is nothing to find an answer in")
    return text


@app.command()
def evaluate(
    model: str = typer.Option(..., "--model", "-m", help="Model bundle (or any HF model directory)."),
    data: str = typer.Option(
        ...,
        "--data",
        "-d",
        help="Labelled file: CSV, TSV, JSONL, JSON, Parquet, CoNLL, SQuAD JSON, or a class-per-folder directory.",
    ),
    output_dir: str | None = typer.Option(
        None, "--output-dir", "-o", help="Where metrics.json and plots go (default: MODEL/eval-NAME)."
    ),
    overwrite: bool = typer.Option(False, "--overwrite", help="Replace an existing output directory."),
    data_format: str | None = typer.Option(
        None, "--format", help="csv, tsv, jsonl, json, parquet, folder or conll, when the extension does not say."
    ),
    text_column: str | None = typer.Option(
        None, "--text-column", help="Text field (default: the one the model was trained on)."
    ),
    text_pair_column: str | None = typer.Option(None, "--text-pair-column", help="Second-text field for pairs."),
    label_column: str | None = typer.Option(
        None, "--label-column", help="Label field (default: the one the model was trained on)."
    ),
    batch_size: int = typer.Option(32, "--batch-size", "-b", min=1, help="Texts per forward pass."),
    device: str | None = typer.Option(None, "--device", help="cpu, cuda, ... (default: a GPU if there is one)."),
    trust_remote_code: bool = TrustOption,
) -> None:
    """Score a trained model on a labelled data set; writes metrics.json and plots."""
    from bertkit.scoring import evaluate_file

    scores, target = evaluate_file(
        model,
        data,
        output_dir,
        overwrite,
        device,
        trust_remote_code=trust_remote_code,
        data_format=data_format,
        batch_size=batch_size,
        text_column=text_column,
        text_pair_column=text_pair_column,
        label_column=label_column,
    )
    from rich.console import Console

    Console().print({k: round(v, 4) for k, v in scores.items() if isinstance(v, float)})
    from bertkit.progress import console

    console.print(f"[green]metrics written to[/green] {target / 'metrics.json'}")


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
BatchOption = typer.Option(32, "--batch-size", "-b", min=1, help="Texts per forward pass.")
DeviceOption = typer.Option(None, "--device", help="cpu, cuda, ... (default: a GPU if there is one).")
TextColumnOption = typer.Option("text", "--text-column", help="Field holding the text in CSV/JSON inputs.")


@app.command()
def embed(
    model: str = ModelOption,
    input: str = typer.Option(..., "--input", "-i", help="Text lines, CSV/TSV/JSONL/JSON/Parquet, or - for stdin."),
    output: str = typer.Option(..., "--output", "-o", help="vectors.npy, vectors.parquet or vectors.jsonl."),
    pooling: str | None = PoolingOption,
    normalize: bool | None = NormalizeOption,
    max_length: int | None = MaxLengthOption,
    text_column: str = TextColumnOption,
    input_format: str | None = typer.Option(None, "--input-format", help="When the extension does not say."),
    batch_size: int = BatchOption,
    device: str | None = DeviceOption,
    trust_remote_code: bool = TrustOption,
) -> None:
    """Write one sentence vector per input text, in input order (a blank line gets a zero vector)."""
    from bertkit.embedding import load_encoder
    from bertkit.outputs import check_output_file
    from bertkit.progress import console
    from bertkit.vectors import embed_file, vector_format

    vector_format(output)  # a bad extension fails before the model loads
    check_output_file(output, input, model)
    encoder = load_encoder(model, pooling, normalize, max_length, device, trust_remote_code)
    count = embed_file(encoder, input, output, input_format, text_column, batch_size)
    s = encoder.settings
    console.print(
        f"[green]{count:,} vectors of {encoder.dimension} written to[/green] {output} "
        f"(pooling {s.pooling}, {'normalised' if s.normalize else 'not normalised'}, settings from {s.origin})"
    )


@app.command()
def similarity(
    model: str = ModelOption,
    input: str = typer.Option(
        ..., "--input", "-i", help="Pairs (CSV/TSV/JSONL with two text columns), or a list of texts with --matrix."
    ),
    output: str | None = typer.Option(None, "--output", "-o", help="Where the scores go (stdout when absent)."),
    matrix: bool = typer.Option(False, "--matrix", help="Score every text of --input against every other."),
    heatmap: Path | None = typer.Option(None, "--heatmap", help="With --matrix: also draw the matrix to this PNG."),
    text_column: str = TextColumnOption,
    text_pair_column: str = typer.Option("text_pair", "--text-pair-column", help="Field of the second text of a pair."),
    pooling: str | None = PoolingOption,
    max_length: int | None = MaxLengthOption,
    batch_size: int = BatchOption,
    device: str | None = DeviceOption,
    trust_remote_code: bool = TrustOption,
) -> None:
    """Cosine similarity of text pairs (one score each), or of all pairs in a list (a matrix). A
    blank line or an empty text gets a null score."""
    from bertkit.data.readers import Blank, located_records, placed
    from bertkit.embedding import load_encoder
    from bertkit.outputs import RecordWriter, atomic_path, atomic_text, check_output_file
    from bertkit.prediction import output_format
    from bertkit.search import heatmap as draw
    from bertkit.search import similarity_rows

    if heatmap is not None and not matrix:
        raise BertkitError("--heatmap draws a --matrix; add --matrix")
    check_output_file(output, input, model)
    if heatmap is not None:
        check_output_file(str(heatmap), input, model)
    records = [placed(w, r) for w, r in located_records(input, text_column=text_column, keep_blank=True)]
    if not records:
        raise BertkitError(f"{input}: no texts in it (the file is empty)")
    needed = [text_column] if matrix else [text_column, text_pair_column]
    for number, record in enumerate(records, start=1):
        missing = [c for c in needed if c not in record and not isinstance(record, Blank)]
        if missing:
            hint = "" if matrix else " (for a matrix of one list of texts, add --matrix)"
            raise BertkitError(
                f"{record.where}: record {number} has no '{missing[0]}' field (fields: {', '.join(record)}); "
                f"set --text-column / --text-pair-column{hint}"
            )
    with atomic_text(output) as handle, contextlib.ExitStack() as stack:
        picture = stack.enter_context(atomic_path(heatmap)) if heatmap is not None else None
        encoder = load_encoder(model, pooling, None, max_length, device, trust_remote_code)
        rows, scores = similarity_rows(encoder, records, matrix, (text_column, text_pair_column), batch_size)
        if picture is not None:
            draw(scores, [r["text"] for r in rows], picture)
        with RecordWriter(handle, output_format(output, None)) as writer:
            for row in rows:
                writer.write(row)
    encoder.report_truncation()


@app.command()
def search(
    model: str = ModelOption,
    corpus: str = typer.Option(
        ..., "--corpus", help="The texts to search: a text file (one a line), a folder or glob of them, or JSONL/CSV."
    ),
    query: list[str] | None = typer.Option(None, "--query", "-q", help="A query (repeatable)."),
    queries: str | None = typer.Option(None, "--queries", help="A file of queries, one a line (or JSONL/CSV)."),
    top_k: int = typer.Option(5, "--top-k", "-k", min=1, help="Hits per query."),
    output: str | None = typer.Option(None, "--output", "-o", help="hits.jsonl (stdout when absent)."),
    text_column: str = TextColumnOption,
    cache_dir: Path | None = typer.Option(
        None, "--cache-dir", help="Where corpus embeddings are kept (default: $BERTKIT_CACHE or ~/.cache/bertkit)."
    ),
    no_cache: bool = typer.Option(False, "--no-cache", help="Embed the corpus afresh and keep nothing."),
    pooling: str | None = PoolingOption,
    max_length: int | None = MaxLengthOption,
    batch_size: int = BatchOption,
    device: str | None = DeviceOption,
    trust_remote_code: bool = TrustOption,
) -> None:
    """Exact semantic search: the corpus texts closest (cosine) to each query. Hits give their
    position in the corpus (blank lines counted); a blank query line gets no hits."""
    from bertkit import search as searching
    from bertkit.data.corpus import read_lines
    from bertkit.embedding import load_encoder
    from bertkit.outputs import RecordWriter, atomic_text, check_output_file

    if bool(query) == bool(queries):
        raise BertkitError("give --query TEXT (repeatable) or --queries FILE, one of the two")
    check_output_file(output, queries, corpus, model)
    asked = list(query) if query else list(read_lines(queries, text_column, keep_blank=True, option="--text-column"))
    if not asked:
        raise BertkitError(f"{queries}: no queries in it (the file is empty)")
    cache = None if no_cache else (cache_dir or searching.default_cache_dir())
    with atomic_text(output) as handle:
        encoder = load_encoder(model, pooling, None, max_length, device, trust_remote_code)
        with RecordWriter(handle, "jsonl") as writer:
            for record in searching.search(encoder, corpus, asked, top_k, text_column, cache, batch_size):
                writer.write(record)
    encoder.report_truncation()


@tokenizer_app.command("train")
def tokenizer_train(
    input: list[str] = typer.Option(
        ..., "--input", "-i", help="Text files (one text a line), folders or globs; repeatable."
    ),
    output: Path = typer.Option(..., "--output", "-o", help="The tokenizer directory to write."),
    vocab_size: int = typer.Option(
        8000, "--vocab-size", min=16, help="Entries in the vocabulary, special tokens included."
    ),
    lowercase: bool = typer.Option(True, "--lowercase/--cased", help="Lowercase (and strip accents) before splitting."),
    japanese: bool = typer.Option(
        False,
        "--japanese",
        help="Cut text into MeCab words (unidic-lite) first and save a BertJapaneseTokenizer (needs bertkit[ja]).",
    ),
    min_frequency: int = typer.Option(2, "--min-frequency", min=1, help="Drop pieces seen fewer times than this."),
    max_length: int = typer.Option(512, "--max-length", min=8, help="The model_max_length the tokenizer records."),
    text_column: str = TextColumnOption,
    overwrite: bool = typer.Option(False, "--overwrite", help="Replace an existing output directory."),
) -> None:
    """Learn a WordPiece vocabulary from text and save a BERT tokenizer (AutoTokenizer loads it).
    With --japanese: MeCab words, then WordPiece, as the Tohoku Japanese BERT models do."""
    from bertkit.data.corpus import read_lines
    from bertkit.outputs import check_output_dir, check_writable
    from bertkit.progress import console, status
    from bertkit.vocab import save_tokenizer, train_wordpiece

    check_output_dir(output, overwrite, input, "tokenizer")
    check_writable(output)  # before the vocabulary is learnt, which can take long
    texts = (line for path in input for line in read_lines(path, text_column, option="--text-column"))
    with status(f"learning a {vocab_size:,}-entry WordPiece vocabulary"):
        tokenizer = train_wordpiece(texts, vocab_size, lowercase, min_frequency, max_length, ", ".join(input), japanese)
    save_tokenizer(tokenizer, output, overwrite, input)
    console.print(f"[green]tokenizer with {len(tokenizer):,} entries written to[/green] {output}")


@app.command()
def tokenize(
    text: list[str] = typer.Argument(None, help="Texts to cut into tokens (or use --input)."),
    model: str = typer.Option(..., "--model", "-m", help="A model or tokenizer: bundle, HF folder or hub id."),
    input: str | None = typer.Option(None, "--input", "-i", help="A file of texts, one a line (or CSV/JSONL)."),
    text_column: str = TextColumnOption,
    as_json: bool = typer.Option(False, "--json", help="One JSON line per text instead of tables."),
    trust_remote_code: bool = TrustOption,
) -> None:
    """Show how the model's tokenizer cuts text: each token, its id, and the characters it covers
    (one result per text: a blank line of --input gets one with no tokens)."""
    import json

    from rich.table import Table

    from bertkit.data.corpus import read_lines
    from bertkit.progress import console
    from bertkit.tokenization import describe_tokens, load_tokenizer

    texts = list(text or [])
    texts += list(read_lines(input, text_column, keep_blank=True, option="--text-column")) if input else []
    if not texts:
        raise BertkitError("give texts to tokenize as arguments, or a file with --input")
    tokenizer = load_tokenizer(model, trust_remote_code=trust_remote_code)
    for one in texts:
        tokens = describe_tokens(tokenizer, one)
        if as_json:
            typer.echo(json.dumps({"text": one, "tokens": tokens}, ensure_ascii=False))
            continue
        table = Table(title=f"{one[:60]}{'…' if len(one) > 60 else ''}  ({len(tokens)} tokens)", title_justify="left")
        for column in ("#", "token", "id", "characters", "text"):
            table.add_column(column, justify="right" if column in ("#", "id") else "left")
        for i, t in enumerate(tokens):
            table.add_row(str(i), t["token"], str(t["id"]), f"{t['start']}-{t['end']}", t["text"])
        console.print(table)


# ---------------------------------------------------------------- config / info


@config_app.command("show")
def config_show(config: Path = ConfigOption, set_: list[str] | None = SetOption) -> None:
    """Print the resolved config: the file, its overrides and every default."""
    from bertkit.config import load_config, to_yaml

    typer.echo(to_yaml(load_config(config, set_)), nl=False)


@config_app.command("init")
def config_init(
    task: str = typer.Argument("classify", help="The task to write a config for."),
    output: str | None = typer.Option(None, "--output", "-o", help="Write to this file (- or absent: stdout)."),
    overwrite: bool = typer.Option(False, "--overwrite", help="Replace an existing file."),
) -> None:
    """Write a complete, commented starting config for TASK."""
    from bertkit.config import starter_yaml
    from bertkit.outputs import atomic_text, check_output_file

    text = starter_yaml(task)
    check_output_file(output, replace=overwrite, example=f"{task}.yaml")
    with atomic_text(output) as handle:
        handle.write(text)
    if output not in (None, "-"):
        from bertkit.progress import console

        console.print(f"[green]config for {task} written to[/green] {output}")


@app.command()
def info() -> None:
    """Versions, devices and the accelerate configuration in use."""
    import os

    from bertkit.hub import offline
    from bertkit.training import library_versions

    for name, version in library_versions().items():
        typer.echo(f"{name:14} {version}")
    import torch

    typer.echo(f"{'cuda':14} {torch.cuda.is_available()} ({torch.cuda.device_count()} device(s))")
    for i in range(torch.cuda.device_count()):
        props = torch.cuda.get_device_properties(i)
        typer.echo(
            f"  cuda:{i}       {props.name}, {props.total_memory / 2**30:.1f} GiB, "
            f"bf16={torch.cuda.is_bf16_supported()}"
        )
    typer.echo(f"{'cpu threads':14} {torch.get_num_threads()}")
    typer.echo(f"{'hub offline':14} {offline()}")
    try:
        from accelerate.commands.config import default_config_file

        path = os.environ.get("ACCELERATE_CONFIG_FILE") or default_config_file
        exists = Path(path).is_file()
        typer.echo(f"{'accelerate':14} config {path} ({'found' if exists else 'none: single process defaults'})")
        if exists:
            typer.echo("  " + Path(path).read_text().strip().replace("\n", "\n  "))
    except ImportError:
        typer.echo(f"{'accelerate':14} not installed")


def main(argv: list[str] | None = None) -> None:
    """Run the CLI. A user's mistake ends with one message and exit code 2; an interruption
    (Ctrl-C, SIGTERM, SIGHUP) removes whatever was half-written and ends with 128 + the signal."""
    import signal

    def stop(number, frame):
        raise Interrupted(number)

    # Ctrl-C too: click turns a KeyboardInterrupt into a silent exit 130. A signal the caller
    # ignores (`nohup` ignores SIGHUP) stays ignored.
    for name in ("SIGINT", "SIGTERM", "SIGHUP"):
        number = getattr(signal, name, None)
        if number is not None and signal.getsignal(number) is not signal.SIG_IGN:
            with contextlib.suppress(ValueError):  # not the main thread
                signal.signal(number, stop)
    _sync_train_commands()
    try:
        app(args=argv, prog_name="bertkit")
    except BertkitError as err:
        _fail(str(err), err.exit_code)
    except (KeyboardInterrupt, Interrupted) as err:
        number = err.number if isinstance(err, Interrupted) else signal.SIGINT
        _fail("interrupted; nothing half-written was left behind", 128 + int(number))
    except OSError as err:
        from bertkit.outputs import writing_failed

        failed = writing_failed(err, err.filename or "a file")
        if failed is None:
            raise
        _fail(str(failed), failed.exit_code)


class Interrupted(BaseException):
    """A termination signal, raised where the program is so that cleanup code runs."""

    def __init__(self, number: int):
        super().__init__(number)
        self.number = number


def _fail(message: str, code: int) -> None:
    from rich.console import Console
    from rich.markup import escape

    Console(stderr=True, highlight=False).print(f"[bold red]error:[/bold red] {escape(message)}", soft_wrap=True)
    sys.exit(code)

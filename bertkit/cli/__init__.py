"""The `bertkit` command line: one thin module per command or command group, named after it
(`bertkit.cli.predict`, `bertkit.cli.train`, ...), registered here on one Typer app. Each command
parses options and imports the heavy modules (torch, transformers) inside its body, so
`bertkit --help` stays instant; the work itself lives in the library."""

from __future__ import annotations

import sys

import typer

from bertkit import __version__
from bertkit.cli import (
    adapter,
    attention,
    audit,
    compare,
    config,
    embed,
    evaluate,
    explain,
    export,
    index,
    info,
    inspect,
    interrupts,
    mine_negatives,
    model,
    predict,
    search,
    select,
    serve,
    similarity,
    smoke,
    tokenize,
    tokenizer,
    train,
    tune,
)
from bertkit.cli.help_text import reflow_help
from bertkit.cli.interrupts import Interrupted
from bertkit.core.errors import BertkitError
from bertkit.core.sharding import leave_if_launched

__all__ = ["Interrupted", "app", "main"]

app = typer.Typer(
    name="bertkit",
    help="Fine-tune and run BERT-family models: train, evaluate, predict.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)
app.add_typer(train.train_app, name="train")
app.add_typer(config.config_app, name="config")
app.add_typer(tokenizer.tokenizer_app, name="tokenizer")
app.add_typer(model.model_app, name="model")
app.add_typer(index.index_app, name="index")
app.add_typer(adapter.adapter_app, name="adapter")
# in the order `bertkit --help` lists them
app.command()(predict.predict)
app.command()(evaluate.evaluate)
app.command()(embed.embed)
app.command()(similarity.similarity)
app.command()(search.search)
app.command(name="mine-negatives")(mine_negatives.mine_negatives)
app.command()(tokenize.tokenize)
app.command()(info.info)
app.command()(inspect.inspect)
app.command()(attention.attention)
app.command()(explain.explain)
app.command()(compare.compare)
app.command()(smoke.smoke)
app.command()(serve.serve)
app.command()(export.export)
app.command()(tune.tune)
app.command()(audit.audit)
app.command()(select.select)


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
        from bertkit.core.hub import go_offline

        go_offline()


def main(argv: list[str] | None = None) -> None:
    """Run the CLI. A user's mistake ends with one message and exit code 2; an interruption
    (Ctrl-C, SIGTERM, SIGHUP) removes whatever was half-written and ends with 128 + the signal."""
    with interrupts.installed():  # the caller's handlers again once main returns
        _main(argv)


def _main(argv: list[str] | None) -> None:
    import signal

    train.sync_train_commands()
    reflow_help(app)
    try:
        app(args=argv, prog_name="bertkit")
    except SystemExit as done:  # how a command ends (click exits), done or refused by click
        if done.code == 1 and type(sys.stdout).__name__ == "PacifyFlushWrapper":
            # typer's exit 1 when the reader of standard output stopped (`| head`); exit code 1 is
            # a bug's, so end as shell tools do when their pipe closes
            sys.exit(128 + int(signal.SIGPIPE))
        leave_if_launched(done.code)
        raise
    except BertkitError as err:
        _fail(str(err), err.exit_code)
    except (KeyboardInterrupt, Interrupted) as err:
        number = err.number if isinstance(err, Interrupted) else signal.SIGINT
        _fail("interrupted; nothing half-written was left behind", 128 + int(number))
    except OSError as err:
        from bertkit.core.outputs import writing_failed

        failed = writing_failed(err, err.filename or "a file")
        if failed is None:
            raise
        _fail(str(failed), failed.exit_code)


def _fail(message: str, code: int) -> None:
    from rich.console import Console
    from rich.markup import escape

    from bertkit.core.sharding import place

    try:  # under a launcher, say which process it was
        here = place()
    except BertkitError:
        here = None
    where = f" ({here.name()})" if here else ""
    Console(stderr=True, highlight=False).print(f"[bold red]error{where}:[/bold red] {escape(message)}", soft_wrap=True)
    leave_if_launched(code)
    sys.exit(code)

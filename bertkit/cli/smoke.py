"""`bertkit smoke`: a config's whole round trip on a tiny model, in seconds, for CI."""

from __future__ import annotations

from pathlib import Path

import typer

from bertkit.cli.options import ConfigOption, SetOption


def smoke(
    config: Path = ConfigOption,
    sets: list[str] | None = SetOption,
    junit: Path | None = typer.Option(None, "--junit", help="Also write a JUnit XML report (one case per stage)."),
) -> None:
    """Smoke-test a config: read, train a few steps, evaluate, predict and reload on a tiny model of
    the same family and a small sample of the data, in a temporary folder. Exit code 2 (and the
    stage's message) on anything the real run would fail on. It does not measure quality."""
    run_and_report(config, sets or [], None, junit)


def run_and_report(config: Path, sets: list[str], task: str | None, junit: Path | None, stages=None) -> None:
    """Run the smoke stages, print a table of them, write the JUnit report; a failure exits 2."""
    from rich.table import Table

    from bertkit import smoke as smoke_lib
    from bertkit.config import load_config
    from bertkit.core.progress import console

    if junit is not None:
        from bertkit.core.outputs import check_output_file

        check_output_file(str(junit), str(config), *_inputs(config, sets, task), example="smoke.xml", flag="--junit")
    failure = None
    try:
        done = smoke_lib.run_smoke(
            lambda extra: load_config(config, [*sets, *extra], task=task), config, stages or smoke_lib.STAGES
        )
    except smoke_lib.SmokeFailed as err:
        done, failure = err.stages, err
    table = Table(title=f"bertkit smoke: {config}", title_justify="left")
    for column in ("stage", "result", "seconds", "detail"):
        table.add_column(column)
    colour = {"passed": "green", "failed": "red", "skipped": "yellow"}
    for stage in done:
        shown = stage.detail if stage.status != "failed" else stage.detail.splitlines()[0][:100]
        table.add_row(stage.name, f"[{colour[stage.status]}]{stage.status}[/]", f"{stage.seconds:.1f}", shown)
    console.print(table)
    if junit is not None:
        from bertkit.core.outputs import atomic_text

        with atomic_text(str(junit)) as handle:
            handle.write(smoke_lib.junit_xml(done, config))
    if failure is not None:
        raise failure


def _inputs(config: Path, sets: list[str], task: str | None) -> list[str]:
    """The config's data files and model folder: the report must never be written over them. A
    config that does not load has none here (the read stage then fails with its message)."""
    from bertkit.config import load_config
    from bertkit.core.errors import BertkitError

    try:
        cfg = load_config(config, sets, task=task)
    except BertkitError:
        return []
    sources = (cfg.data.train, cfg.data.validation, cfg.data.test)
    return [*(p for s in sources if s is not None for p in s.local_paths()), cfg.model.name, cfg.model.tokenizer]

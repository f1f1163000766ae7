"""`bertkit predict`: stream records from a file or stdin through a bundle, write one result each.

Results stay aligned with the input: one per record (per line of a text file), in input order.
A blank line or a record whose text is empty gets the task's empty result (its prediction
fields null, `"empty": true`) without going through the model.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Iterator
from dataclasses import replace
from pathlib import Path

from bertkit.core import sharding
from bertkit.core.adapters.base import bundle_inputs
from bertkit.core.data.formats import detect_format
from bertkit.core.data.readers import count_records, located_records
from bertkit.core.data.records import Blank, place_of, placed
from bertkit.core.errors import BertkitError
from bertkit.core.outputs import OUTPUT_FORMATS, RecordWriter, atomic_text, check_output_file
from bertkit.core.progress import bar, console
from bertkit.core.run_info import RunInfo
from bertkit.tasks import get_task
from bertkit.tasks.bundle import open_bundle
from bertkit.tasks.contract.options import PredictOptions


def output_format(output: str | None, explicit: str | None, input_format: str | None = None) -> str:
    if explicit:
        if explicit not in OUTPUT_FORMATS:
            raise BertkitError(f"--format {explicit}: use one of {', '.join(OUTPUT_FORMATS)}")
        return explicit
    suffix = Path(output).suffix.lower().lstrip(".") if output and output != "-" else ""
    if suffix in OUTPUT_FORMATS:  # the extension first, as --format's help says: -o x.jsonl is JSON lines
        return suffix
    if input_format in ("conll", "squad"):
        return input_format
    if suffix in ("", "ndjson") or (output and Path(output).exists() and not Path(output).is_file()):
        return "jsonl"  # no extension, or a FIFO / device such as /dev/stdout
    raise BertkitError(
        f"-o {output}: cannot tell the format from the extension .{suffix}; name the file .jsonl, .csv, .tsv or "
        ".conll, or give --format"
    )


def predict_file(
    model: str,
    source: str,
    output: str | None,
    fmt: str | None = None,
    input_format: str | None = None,
    device: str | None = None,
    records: Iterable[dict] | None = None,
    trust_remote_code: bool = False,
    options: PredictOptions | None = None,
    runtime: str | None = None,
    precision: str = "auto",
) -> int:
    """Predict for every record of `source` (or of `records`, when given) and write the results.
    `precision`: as `inference.precision_for` (auto: half precision on a CUDA GPU, fp32 elsewhere)."""

    here = sharding.place()
    if here is not None:
        sharding.refuse_streams(source if records is None else None, output, "predict")
    check_output_file(output, source, *bundle_inputs(model))
    if records is None:
        input_format = detect_format(source, input_format)
    chosen = output_format(output, fmt, input_format)  # a bad extension fails before the model loads
    bundle = open_bundle(model, trust_remote_code, runtime)
    task = get_task(bundle.task)
    options = options or PredictOptions()
    text_column = options.text_field(bundle.info)
    if records is None:
        layout, join = options.layout(), options.text_join(bundle.info)
        located = located_records(source, input_format, text_column, keep_blank=True, layout=layout, text_join=join)
        records = (placed(where, record) for where, record in located)
        counted = source != "-" and here is None  # under a launcher the bar counts this process's share
        total = count_records(source, input_format, keep_blank=True, layout=layout) if counted else None
    else:
        records = list(records)
        total = len(records)
    written = empty = 0
    options = replace(options, text_column=text_column, output_format=chosen)
    if here is not None:
        return _predict_shared(here, task, bundle, (device, precision), records, options, output, source)
    with atomic_text(output) as handle:  # opened first: an output that cannot be written fails before any work
        tokenizer = bundle.load_tokenizer()
        network = bundle.load_model(task.auto_model, device, precision)
        with bar("predicting", total) as progress, RecordWriter(handle, chosen) as writer:
            for record in aligned(task, network, tokenizer, bundle.info, records, options):
                writer.write(record)
                written += 1
                empty += bool(record.get("empty"))
                progress.advance(progress.task_ids[0])
            if written == 0:
                raise BertkitError(f"{source}: no input records (the file is empty)")
    if empty:
        console.print(f'[dim]{empty:,} empty input(s) got empty results (marked "empty": true)[/dim]')
    return written


def _predict_shared(here, task, bundle, placement, records, options: PredictOptions, output: str, source: str) -> int:
    """predict as one of several processes: this one's units into its part, then (process 0) all
    parts into the output, as one process alone would have written it."""
    written = empty = 0
    with sharding.group(here), sharding.shards(here, output) as shards:
        tokenizer = bundle.load_tokenizer()
        network = bundle.load_model(task.auto_model, *placement)
        with bar(f"predicting ({here.name()})") as progress:
            for unit, result in units(task, network, tokenizer, bundle.info, records, options, here.owns):
                shards.add(unit, result)
                progress.advance(progress.task_ids[0])
        shards.finish()
        if not here.main:
            return 0
        with atomic_text(output) as handle, RecordWriter(handle, options.output_format) as writer:
            for record in shards.merged():
                writer.write(record)
                written += 1
                empty += bool(record.get("empty"))
            if written == 0:
                raise BertkitError(f"{source}: no input records (the file is empty)")
    if empty:
        console.print(f'[dim]{empty:,} empty input(s) got empty results (marked "empty": true)[/dim]')
    return written


def aligned(
    task, model, tokenizer, info: RunInfo, records: Iterable[dict], options: PredictOptions, check: bool = True
) -> Iterator[dict]:
    """The task's results for `records`, one per record in order; empty records get the task's
    empty result without reaching the model (the task sees only the others). `check=False`: the
    records were checked already (`bertkit serve` checks each request before it joins a batch)."""
    return (result for _, result in units(task, model, tokenizer, info, records, options, check=check))


def units(
    task, model, tokenizer, info: RunInfo, records: Iterable[dict], options: PredictOptions, keep=None, check=True
):
    """`aligned`'s results as (unit, result). Unit u holds the task's u-th chunk of records that
    are not empty (`records_per_pass` of them, the chunks it predicts together) and the empty ones
    just before them; with `keep(unit)` (one of several processes), the task sees only the kept
    units' records, in the same chunks, and so runs the batches one process alone would run.
    Every record that is not empty is first checked by the task (`Prediction.check_record`), every
    process checking all of them, so that all refuse the same input."""
    queue: deque = deque()  # (is empty, record, unit) in input order, for records the task has taken
    first: list[dict] = []  # the input's first record that is not a blank line
    seen: dict = {}  # shared by the checks of one input's records
    checking = task.prediction.check_record if check else None

    def feed() -> Iterator[dict]:
        taken = 0  # records not empty so far
        for number, record in enumerate(records, start=1):
            if not first and not isinstance(record, Blank):
                first.append(record)
            hollow = is_empty(task, record, info, options)
            if checking is not None and not hollow:
                checking(record, tokenizer, info, options, place_of(record, number), seen)
            unit = taken // task.prediction.records_per_pass
            taken += not hollow
            if keep is not None and not keep(unit):
                continue
            queue.append((hollow, record, unit))
            if not hollow:
                yield record

    def empty(record: dict) -> dict:
        # Every record up to the one whose result comes next has been fed, so `first` is the
        # input's first non-blank record whenever there is one before or at that point: the same
        # shape for a blank line wherever it is.
        if isinstance(record, Blank):
            record.like = first[0] if first else None
        return task.prediction.empty_result(model, record, info, options)

    def kept(record: dict, result: dict) -> dict:
        # the input is labelled when its first record holds a gold field: then every result keeps
        # the gold fields (null where a record lacks one), so a table's columns are the same for all
        gold = [f for f in task.prediction.gold_fields(info) if first and f in first[0]] if options.keep_gold else []
        if not gold:
            return result
        where = getattr(record, "where", "") or "an input record"
        read = {name: task.prediction.read_gold(name, record.get(name), info, where) for name in gold}
        return with_gold(read, result, gold)

    for result in task.prediction.predict(model, tokenizer, info, feed(), options):
        while queue and queue[0][0]:
            _, record, unit = queue.popleft()
            yield unit, kept(record, empty(record))
        _, record, unit = queue.popleft()
        yield unit, kept(record, result)
    while queue:
        hollow, record, unit = queue.popleft()
        if not hollow:  # a task must give one result per record: never pad silently
            raise RuntimeError(f"{task.name}: no prediction for a record ({record!r:.80})")
        yield unit, kept(record, empty(record))


ECHOED = ("id", "text", "text_pair", "tokens", "rows")  # result fields that repeat the input as it was


def with_gold(record: dict, result: dict, gold: list[str]) -> dict:
    """`result` with the input's gold fields (`record`'s, as the task reads them: null when this
    record lacks one), after the fields that repeat the input; a prediction field of the same name is written
    as `predicted_<name>`, so the gold answer is never overwritten by the model's."""
    out: dict = {}
    placed = False
    for key, value in result.items():
        if not placed and key not in ECHOED:
            out.update({name: record.get(name) for name in gold})
            placed = True
        out[f"predicted_{key}" if key in gold else key] = value
    if not placed:
        out.update({name: record.get(name) for name in gold})
    return out


def is_empty(task, record: dict, info: RunInfo, options: PredictOptions) -> bool:
    if isinstance(record, Blank):
        return True
    return task.prediction.is_empty(record, info, options)


def asked_question(question: str, context_file: Path) -> list[dict]:
    """The one QA record of `predict --question Q --context-file F`: F's whole text is the context."""
    return [{"question": question, "context": _context_text(context_file)}]


def _context_text(path: Path) -> str:
    if path.is_dir():
        raise BertkitError(f"--context-file {path} is a directory; give the text file to find the answer in")
    if not path.is_file():
        raise BertkitError(f"--context-file {path}: no such file")
    try:
        # as stored: `start` and `end` count the file's own characters (a CR LF is two, not one)
        with open(path, encoding="utf-8", newline="") as handle:
            text = handle.read()
    except UnicodeDecodeError as err:
        raise BertkitError(f"{path}: not UTF-8 text ({err.reason} at byte {err.start})") from None
    if not text.strip():
        raise BertkitError(f"--context-file {path} is empty: there is nothing to find an answer in")
    return text

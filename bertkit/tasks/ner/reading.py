"""Reading NER data into words and IOB2 tags: CoNLL columns, token/tag records, character spans
over a text, and Hugging Face data sets with integer tags.
"""

from __future__ import annotations

from bertkit.core import data as data_mod
from bertkit.core import graphemes, tokenization
from bertkit.core.data.conll import read_conll
from bertkit.core.data.formats import Layout, detect_format, told_by
from bertkit.core.data.readers import read_records
from bertkit.core.data.records import text_value
from bertkit.core.data.sniffing import looks_like_conll
from bertkit.core.data_settings import DataSource
from bertkit.core.errors import BertkitError, RecordError
from bertkit.core.progress import console
from bertkit.tasks.ner import tags
from bertkit.tasks.ner.settings import NerConfig


def tokens_field_of(record: dict, info: dict) -> str | None:
    """The field of `record` holding its token list (the bundle's `ner.tokens_field`, or
    `tokens`, as CoNLL input gives it), or None for a record that is not a token list."""
    own = (info.get("ner") or {}).get("tokens_field", "tokens")
    return next((field for field in (own, "tokens") if field in record), None)


def tokens_value(value, where: str, field: str) -> list[str]:
    """A record's token list as words: a list of strings (a number is written out, as in a text
    field); anything else, a text included, is a `RecordError` naming the record and the field
    (read as it is, a text would be tagged letter by letter, a null as the word "None")."""
    if not isinstance(value, list):
        kind = "text" if isinstance(value, str) else type(value).__name__
        raise RecordError(
            f"{where}: '{field}' holds {kind}, not a list of tokens; give the words as a JSON list", field
        )
    words = []
    for position, token in enumerate(value, start=1):
        if isinstance(token, str):
            words.append(token)
        elif isinstance(token, (int, float)) and not isinstance(token, bool):
            words.append(str(token))
        else:
            kind = "null" if token is None else type(token).__name__
            raise RecordError(
                f"{where}: token {position} of '{field}' is {kind}, not a word; give each token as a string", field
            )
    return words


def ner_format(source: DataSource) -> str:
    """The format of an NER file. Where the extension does not say it all (`.txt`, `.tsv`, `.dat`,
    none), a file of CoNLL columns is read as CoNLL, and the log says so and why; a file that is
    plain text lines (no tags to learn from) is an error naming the format assumed."""

    fmt = detect_format(source.path, source.format)
    if source.format is None and fmt in ("text", "tsv", "csv") and source.path != "-":
        why = looks_like_conll(source.path, source.encoding or "utf-8")
        if why:
            console.print(f"{source.path}: read as CoNLL ({why}); set `format:` on the source to read it otherwise")
            return "conll"
        if fmt == "text":
            raise BertkitError(
                f"{source.path}: read as plain text lines (from {told_by(source.path)}), which hold no tags or "
                "entities for NER. "
                "If it is CoNLL (a token and its tag on each line), its last column holds no tags that bertkit "
                "recognises: set `format: conll` on the source and ner.tag_column; for entity spans use JSON lines"
            )
    return fmt


def read_examples(source: DataSource, ner: NerConfig, text_column: str, role: str) -> list[dict]:
    """Records with `tokens` + `tags`, or `text` + `entities` ({type, start, end}), checked. `ner`
    names the fields and columns; `text_column` is the text field of entity-span records."""
    if source.hub:
        ds = data_mod.load_source(source, text_column)
        return [{"tokens": list(r[ner.tokens_field]), "tags": list(r[ner.tags_field])} for r in _hub_tags(ds, ner)]

    if source.files:
        raise BertkitError(
            f"{source.describe()}: one file per class is for classification; NER reads CoNLL, "
            "token JSON or entity spans"
        )
    layout = Layout.of(source)
    fmt = ner_format(source)
    if fmt == "conll":
        found = [
            {"tokens": r["tokens"], "tags": r["tags"], "where": f"{source.path}:{r['line']}"}
            for r in read_conll(source.path, ner.token_column, ner.tag_column, layout.encoding)
        ]
    else:
        found = []
        for number, record in enumerate(read_records(source.path, fmt, layout=layout), start=1):
            where = f"{source.path}, record {number}"
            if ner.tokens_field in record:
                tokens, tag_seq = record[ner.tokens_field], record.get(ner.tags_field)
                if tag_seq is None or len(tag_seq) != len(tokens):
                    raise BertkitError(
                        f"{where}: '{ner.tags_field}' must list one tag per token ({len(tokens)} tokens)"
                    )
                found.append({"tokens": [str(t) for t in tokens], "tags": [str(t) for t in tag_seq], "where": where})
            elif text_column in record:
                if ner.entities_field not in record:
                    raise BertkitError(
                        f"{where}: no '{ner.entities_field}' field (fields: {', '.join(record)}). Set "
                        "ner.entities_field to the field that lists the entities (a sentence without any "
                        "has an empty list)"
                    )
                text = text_value(record[text_column], where, text_column)
                found.append({"text": text, "entities": _spans(record, ner, text, where), "where": where})
            else:
                raise BertkitError(
                    f"{where}: expected '{ner.tokens_field}' + '{ner.tags_field}', or '{text_column}' + "
                    f"'{ner.entities_field}' (fields there: {', '.join(record)})"
                )
    empty = [r["where"] for r in found if not r.get("tokens", r.get("text"))]
    if empty:
        raise BertkitError(f"{len(empty)} empty sentence(s) in the {role} data, first at {empty[0]}")
    if not found:
        raise BertkitError(f"{source.describe()}: no sentences in this file")
    return found


def require_entities(word_tags: list[list[str]], where: str) -> None:
    """Scoring data without a single entity would score precision and recall of nothing."""
    if not any(tag != "O" for seq in word_tags for tag in seq):
        raise BertkitError(
            f"{where}: the data holds no entities at all, so there is nothing to score. Check the tag "
            "column (ner.tag_column) or the entities field (ner.entities_field)"
        )


def _hub_tags(ds, ner):
    import datasets

    feature = ds.features[ner.tags_field]
    inner = getattr(feature, "feature", None)
    if isinstance(inner, datasets.ClassLabel):
        for row in ds:
            yield {
                ner.tokens_field: row[ner.tokens_field],
                ner.tags_field: [inner.int2str(i) for i in row[ner.tags_field]],
            }
    else:
        yield from ds


def _spans(record: dict, ner, text: str, where: str) -> list[dict]:
    spans = []
    for entity in record.get(ner.entities_field) or []:
        try:
            if ner.span_field:
                start, end = (int(x) for x in entity[ner.span_field])
            else:
                start, end = int(entity[ner.start_field]), int(entity[ner.end_field])
            kind = str(entity[ner.type_field])
        except (KeyError, TypeError, ValueError):
            needs = f"'{ner.start_field}', '{ner.end_field}'"
            if ner.span_field:
                needs = f"'{ner.span_field}' ([start, end])"
            raise BertkitError(f"{where}: each entity needs {needs} and '{ner.type_field}' (got {entity})") from None
        if start == end and 0 <= start <= len(text):
            raise BertkitError(f"{where}: entity {entity} is empty (its start is its end); give its end, or drop it")
        if not 0 <= start < end <= len(text):
            raise BertkitError(f"{where}: entity {entity} lies outside the text ({len(text)} characters)")
        spans.append({"type": kind, "start": start, "end": end})
    spans.sort(key=lambda s: s["start"])
    for a, b in zip(spans, spans[1:], strict=False):
        if b["start"] < a["end"]:
            raise BertkitError(f"{where}: entities overlap: {a} and {b}; keep one of them")
    return spans


def scheme_of(sequences, role: str) -> str:
    try:
        return tags.detect_scheme([list(seq) for seq in sequences])
    except ValueError as err:
        raise BertkitError(f"{role} data: '{err}' is not a tag (expected O, B-X, I-X, E-X, S-X, ...)") from None


def scheme_for(sequences, ner_scheme: str, recorded: str | None, role: str) -> str:
    """The scheme to read a labelled file's tags in, for a model: `ner.scheme` when it was set,
    else the scheme training found in its data (`recorded`, as the bundle's bertkit.json keeps
    it) when the file's tags are all of it, else what the file's own tags say (a bundle from
    before the scheme was recorded, or a file in another scheme: IOB2 data for a BIOES model)."""
    if ner_scheme != "auto":
        return ner_scheme
    if recorded in tags.SCHEMES:
        try:
            prefixes = {tags.split_tag(tag)[0] for seq in sequences for tag in seq}
        except ValueError as err:
            raise BertkitError(f"{role} data: '{err}' is not a tag (expected O, B-X, I-X, E-X, S-X, ...)") from None
        if prefixes <= tags.PREFIXES_OF[recorded]:
            return recorded
    return scheme_of(sequences, role)


def repair_note(role: str, repaired: int, scheme: str) -> str:
    return f"{role} data: {repaired} tag(s) did not fit the {scheme} scheme and were repaired"


def normalise_scheme(split, scheme: str, role: str):
    """`split` with its tags in IOB2, and how many tags were repaired to fit `scheme`."""
    repaired = 0
    fixed = []
    for seq in split["tags"]:
        try:
            result = tags.to_iob2(seq, scheme)
        except ValueError as err:
            raise BertkitError(
                f"{role} data: '{err}' is not a tag of the {scheme} scheme (expected O, B-X, I-X, ...)"
            ) from None
        repaired += result.repaired
        fixed.append(result.tags)
    return split.remove_columns("tags").add_column("tags", fixed), repaired


class NerSplits(dict):
    """NER's splits as `load` gives them (tags in IOB2), with what reading them found:
    `tag_scheme` is {"scheme", "detected", "repaired": {role: tags repaired}} when the training
    data has tags (None for entity spans), kept by `setup` in the bundle's bertkit.json."""

    tag_scheme: dict | None = None


def words_and_tags(
    split, tokenizer, role: str, cut: str = "whole words were labelled"
) -> tuple[list[list[str]], list[list[str]]]:
    """Each sentence's words and their gold IOB2 tags (span data: the words the tokenizer cuts the
    text into, tagged where an entity covers them); `cut`: what is said of spans that cut a word."""
    if "tags" in split.column_names:
        return [list(t) for t in split["tokens"]], [list(t) for t in split["tags"]]
    words, word_tags, unaligned, unread = [], [], 0, 0
    for text, spans in zip(split["text"], split["entities"], strict=True):
        found = tokenization.words_with_offsets(tokenizer, text)
        seq = ["O"] * len(found)
        clusters = graphemes.Graphemes(text) if spans else None
        for span in spans:
            inside = [i for i, (_, s, e) in enumerate(found) if s < span["end"] and e > span["start"]]
            if not inside:  # white space, or characters the tokenizer drops (a zero-width space)
                unread += 1
                continue
            # compared as predict's spans are made: whole clusters, white space at the edges left out
            # (a span with spaces at its edges, or without the mark on its last letter, cuts no word)
            words_span = clusters.snap(found[inside[0]][1], found[inside[-1]][2])
            unaligned += clusters.snap(span["start"], span["end"]) != words_span
            for k, i in enumerate(inside):
                seq[i] = f"{'B' if k == 0 else 'I'}-{span['type']}"
        words.append([w for w, _, _ in found])
        word_tags.append(seq)
    if unaligned:
        console.print(
            f"[yellow]warning:[/yellow] {role} data: {unaligned} entity span(s) cut through a word; {cut}"
        )
    if unread:
        console.print(
            f"[yellow]warning:[/yellow] {role} data: {unread} entity span(s) cover no word the tokenizer reads "
            "(only white space, or characters it drops such as a zero-width space): no tag can mark them"
        )
    return words, word_tags


def repaired_tags(info) -> list[str]:
    """Tags of the data that did not fit its scheme (repaired to IOB2), from what reading found
    (the run's description): training prints these, `bertkit inspect` reports them."""
    found = info.get("tag_scheme") or {}
    return [repair_note(role, n, found["scheme"]) for role, n in (found.get("repaired") or {}).items() if n]

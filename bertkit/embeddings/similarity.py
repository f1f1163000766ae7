"""`bertkit similarity`: cosine similarity of text pairs (one score each) or of every pair in a
small list (a matrix, optionally drawn as a heatmap).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from pathlib import Path

import numpy as np

from bertkit.core.adapters.base import bundle_inputs
from bertkit.core.data.readers import located_records
from bertkit.core.data.records import Blank, place_of, placed, text_value
from bertkit.core.errors import BertkitError
from bertkit.core.outputs import RecordWriter, atomic_path, atomic_text, check_output_file
from bertkit.core.plots import pyplot, save_png
from bertkit.core.pooling import cosine_matrix, cosines, unit_vectors
from bertkit.prediction import output_format

MATRIX_LIMIT = 5000  # texts; beyond this a full matrix is the wrong tool (use search)


def pair_scores(encoder, left: list[str], right: list[str], batch_size: int = 32) -> np.ndarray:
    """Cosine of each pair; NaN where either text is empty."""
    a, b = unit_vectors(encoder, left, batch_size), unit_vectors(encoder, right, batch_size)
    scores = cosines(a, b)
    scores[[not x.strip() or not y.strip() for x, y in zip(left, right, strict=True)]] = np.nan
    return scores


def matrix_scores(encoder, texts: list[str], batch_size: int = 32) -> np.ndarray:
    """Cosine of every pair of texts; NaN in the rows and columns of empty texts."""
    if len(texts) > MATRIX_LIMIT:
        raise BertkitError(
            f"{len(texts):,} texts make too large a matrix (limit {MATRIX_LIMIT:,}); use `bertkit search` instead"
        )
    vectors = unit_vectors(encoder, texts, batch_size)
    scores = cosine_matrix(vectors, vectors)
    empty = [not t.strip() for t in texts]
    scores[empty, :] = np.nan
    scores[:, empty] = np.nan
    return scores


def similarity_rows(encoder, records: list[dict], matrix: bool, columns: tuple[str, str], batch_size: int):
    """Output rows for `bertkit similarity` (pairs: each record with its score; a matrix: each
    text with its scores against all), and the matrix itself (None for pairs). A score that
    involves an empty text is null, and its row is marked `"empty": true`."""
    text_column, pair_column = columns
    texts = [text_value(r.get(text_column), place_of(r, i + 1), text_column) for i, r in enumerate(records)]
    if matrix:
        scores = matrix_scores(encoder, texts, batch_size)
        rows = []
        for i, (text, row) in enumerate(zip(texts, scores, strict=True)):
            rows.append({"index": i, "text": text, "scores": [_rounded(x) for x in row]})
            if not text.strip():
                rows[-1]["empty"] = True
        return rows, scores
    pairs = [text_value(r.get(pair_column), place_of(r, i + 1), pair_column) for i, r in enumerate(records)]
    rows = []
    for record, value in zip(records, pair_scores(encoder, texts, pairs, batch_size), strict=True):
        rows.append({**record, "score": _rounded(value)})
        if np.isnan(value):
            rows[-1]["empty"] = True
    return rows, None


def _rounded(value) -> float | None:
    return None if np.isnan(value) else round(float(value), 6)


def heatmap(matrix: np.ndarray, texts: list[str], path: Path) -> None:

    plt = pyplot()
    n = len(texts)
    size = min(4 + 0.35 * n, 20)
    fig, ax = plt.subplots(figsize=(size + 1.5, size))
    lowest = float(np.nanmin(matrix)) if np.isfinite(matrix).any() else 0.0
    image = ax.imshow(np.ma.masked_invalid(matrix), cmap="viridis", vmin=min(0.0, lowest), vmax=1.0)
    if n <= 60:
        labels = [t if len(t) <= 40 else t[:37] + "..." for t in texts]
        ax.set_xticks(range(n), labels, rotation=60, ha="right", fontsize=7)
        ax.set_yticks(range(n), labels, fontsize=7)
    if n <= 15:
        for (i, j), value in np.ndenumerate(matrix):
            if np.isnan(value):
                continue
            ax.text(
                j, i, f"{value:.2f}", ha="center", va="center", fontsize=7, color="white" if value < 0.6 else "black"
            )
    fig.colorbar(image, ax=ax, label="cosine similarity")
    ax.set_title("Cosine similarity")
    fig.tight_layout()
    save_png(fig, path)


def similarity_file(
    model: str,
    load: Callable,
    input: str,
    output: str | None,
    matrix: bool,
    picture_path: Path | None,
    columns: tuple[str, str],
    batch_size: int,
) -> None:
    """Score the pairs of `input` (or, with `matrix`, every pair of its texts) with the encoder
    `load()` returns, and write one row each to `output` (stdout when None); with a matrix, also
    draw it to `picture_path`. Every check that can fail is made before the model loads."""
    text_column, text_pair_column = columns
    if picture_path is not None and not matrix:
        raise BertkitError("--heatmap draws a --matrix; add --matrix")
    check_output_file(output, input, *bundle_inputs(model))
    written_as = output_format(output, None)
    if picture_path is not None:
        if picture_path.suffix.lower() != ".png":
            raise BertkitError(f"--heatmap {picture_path}: the heatmap is a PNG picture; name it NAME.png")
        check_output_file(str(picture_path), input, *bundle_inputs(model))
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
        picture = stack.enter_context(atomic_path(picture_path)) if picture_path is not None else None
        encoder = load()
        rows, scores = similarity_rows(encoder, records, matrix, columns, batch_size)
        if picture is not None:
            heatmap(scores, [r["text"] for r in rows], picture)
        with RecordWriter(handle, written_as) as writer:
            for row in rows:
                writer.write(row)
    encoder.report_truncation()

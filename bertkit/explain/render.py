"""An explanation shown three ways, all from the JSON `explain` returns: coloured words in the
terminal, a self-contained HTML page (inline CSS, no script) and a PNG. Green words raise the
explained score, red ones lower it; the stronger the colour, the larger the word's attribution
next to the largest one of the same explanation."""

from __future__ import annotations

import html
import re
from pathlib import Path

from bertkit.core.plots import pyplot
from bertkit.tasks import get_task
from bertkit.tasks.contract.explaining import number

FOR, AGAINST = (46, 160, 67), (215, 48, 39)
LABELS = {"text": "text", "text_pair": "pair", "question": "question", "context": "context"}


def explanations(result: dict) -> list[dict]:
    """Every explanation a result holds (one for classify, one per entity, start and end for qa)."""
    return get_task(result["task"]).explainer.shown(result)


def colour(value: float, largest: float) -> str:
    """The background of a word: white blended towards green (or red) by |value| / largest."""
    strength = min(abs(value) / largest, 1.0) if largest > 0 else 0.0
    base = FOR if value >= 0 else AGAINST
    r, g, b = (round(255 - strength * (255 - c)) for c in base)
    return f"#{r:02x}{g:02x}{b:02x}"


def segments(result: dict, values: list[float]) -> list[tuple[str, list[tuple[str, float | None]]]]:
    """Each part of the input (text, pair; question, context) as pieces of its text, in order:
    a word with its attribution, or the characters between words (None)."""
    parts = [p for p in ("text", "text_pair", "question", "context") if isinstance(result.get(p), str)]
    out = []
    for part in parts:
        text, at, pieces = result[part], 0, []
        for word, value in zip(result["words"], values, strict=True):
            if word["part"] != part or word["start"] < at:
                continue
            if word["start"] > at:
                pieces.append((text[at : word["start"]], None))
            pieces.append((text[word["start"] : word["end"]], value))
            at = word["end"]
        if at < len(text):
            pieces.append((text[at:], None))
        out.append((part, pieces))
    return out


def headline(result: dict) -> str:
    return get_task(result["task"]).explainer.headline(result)


def title(explained: dict, result: dict) -> str:
    probability = explained.get("probability")
    shown = f" (probability {probability:.3f})" if probability is not None else ""
    return f"{get_task(result['task']).explainer.title(explained, result)}{shown}"


def detail(explained: dict, result: dict) -> str:
    kind = result["score_kind"]
    total = sum(explained["word_attributions"])
    line = f"{kind}: {number(explained['score'])} at the text, {number(explained['baseline_score'])} at the baseline"
    if result["method"] == "integrated-gradients":
        error = abs(explained["completeness_error"])
        line += f"; attributions sum to {number(total)} (completeness error {error:.1e})"
    else:
        line += f"; each word's attribution is the drop when it alone is the baseline (sum {number(total)})"
    return line


def terminal(result: dict, console) -> None:
    from rich.text import Text

    console.print(Text(headline(result), style="bold"))
    for explained in explanations(result):
        values = explained["word_attributions"]
        largest = max((abs(v) for v in values), default=0.0)
        console.print(Text(title(explained, result), style="bold"))
        console.print(Text(detail(explained, result), style="dim"))
        for part, pieces in segments(result, values):
            line = Text(f"{LABELS[part]}: " if _parts(result) > 1 else "")
            for piece, value in pieces:
                strong = value is not None and largest > 0 and abs(value) / largest > 0.02
                line.append(piece, style=f"black on {colour(value, largest)}" if strong else None)
            console.print(line)
    console.print(Text("green: towards the target; red: against it; stronger colour, larger share", style="dim"))


def _parts(result: dict) -> int:
    return len({w["part"] for w in result["words"]})


STYLE = """
body { font-family: system-ui, sans-serif; max-width: 60em; margin: 2em auto; color: #222; }
h1 { font-size: 1.3em; } h2 { font-size: 1.05em; margin: 1.4em 0 0.2em; }
.detail, .meta { color: #666; font-size: 0.9em; margin: 0.2em 0; }
.text { line-height: 2.1; font-size: 1.1em; white-space: pre-wrap; }
.text span.w { padding: 0.15em 0.1em; border-radius: 0.2em; }
.part { color: #888; font-size: 0.85em; margin-right: 0.5em; }
.legend { margin-top: 2em; font-size: 0.9em; }
.legend span { display: inline-block; padding: 0.1em 0.6em; }
"""


def page(result: dict) -> str:
    """The self-contained HTML page: every text escaped, inline CSS, no script."""
    escape = html.escape
    out = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8"><title>bertkit explain</title>',
        f"<style>{STYLE}</style></head><body>",
        f"<h1>{escape(headline(result))}</h1>",
        f'<p class="meta">{escape(_method(result))}</p>',
    ]
    for explained in explanations(result):
        values = explained["word_attributions"]
        largest = max((abs(v) for v in values), default=0.0)
        out.append(f"<h2>{escape(title(explained, result))}</h2>")
        out.append(f'<p class="detail">{escape(detail(explained, result))}</p>')
        for part, pieces in segments(result, values):
            line = [f'<span class="part">{escape(LABELS[part])}</span>'] if _parts(result) > 1 else []
            for piece, value in pieces:
                if value is None:
                    line.append(escape(piece))
                else:
                    line.append(
                        f'<span class="w" style="background:{colour(value, largest)}" '
                        f'title="{escape(f"{value:+.4g}")}">{escape(piece)}</span>'
                    )
            out.append(f'<div class="text">{"".join(line)}</div>')
    marks = ((-1, "−1"), (-0.5, "−½"), (-0.2, "&nbsp;"), (0.2, "&nbsp;"), (0.5, "+½"), (1, "+1"))
    legend = "".join(f'<span style="background:{colour(v, 1.0)}">{n}</span>' for v, n in marks)
    out.append(
        f'<p class="legend">{legend} attribution / the largest one: green raises the score, red lowers it '
        "(hover a word for its number)</p>"
    )
    out.append("</body></html>\n")
    return "\n".join(out)


def _method(result: dict) -> str:
    if result["method"] == "integrated-gradients":
        token = result["baseline"].upper()
        return f"integrated gradients, {result['steps']} steps; baseline: every word's tokens [{token}]"
    return f"occlusion: each word's tokens replaced by [{result['baseline'].upper()}] in turn"


def png(result: dict, path: Path) -> None:
    """The same view as a picture: one block per explanation, its words on coloured backgrounds."""

    plt = pyplot()
    width, size, margin = 1000, 13, 16  # pixels (dpi 100), points, pixels
    fig = plt.figure(figsize=(width / 100, 2), dpi=100)
    renderer = fig.canvas.get_renderer()

    def measure(text: str) -> float:
        probe = fig.text(0, 0, text, fontsize=size)
        found = probe.get_window_extent(renderer).width
        probe.remove()
        return found

    space, step = measure("a b") - measure("ab"), size * 2.0
    placed = []  # (x, y from the top, text, background or None, style)
    y = margin + step / 2
    placed.append((margin, y, headline(result), None, {"fontweight": "bold"}))
    for explained in explanations(result):
        values = explained["word_attributions"]
        largest = max((abs(v) for v in values), default=0.0)
        y += step * 1.3
        placed.append((margin, y, title(explained, result), None, {"fontweight": "bold"}))
        y += step * 0.8
        placed.append((margin, y, detail(explained, result), None, {"color": "#666666", "fontsize": size - 3}))
        for part, pieces in segments(result, values):
            y += step
            x = margin
            if _parts(result) > 1:
                placed.append((x, y, LABELS[part] + ":", None, {"color": "#888888"}))
                x += measure(LABELS[part] + ":") + space
            gap = False
            for piece, value in pieces:
                chunks = re.split(r"(\s+)", piece) if value is None else [piece]
                for chunk in filter(None, chunks):
                    if chunk.isspace():
                        gap = True
                        continue
                    wide = measure(chunk) + (6 if value is not None else 2)  # room for the coloured box
                    x += space if gap and x > margin else 0
                    if x + wide > width - margin and x > margin:
                        x, y = margin, y + step
                    inset = 3 if value is not None else 0
                    placed.append((x + inset, y, chunk, None if value is None else colour(value, largest), {}))
                    x, gap = x + wide, False
    y += step
    placed.append(
        (margin, y, "green: towards the target; red: against it", None, {"color": "#666666", "fontsize": size - 3})
    )
    height = y + margin + step / 2
    fig.set_size_inches(width / 100, height / 100)
    for x, top, text, back, style in placed:
        box = {"facecolor": back, "edgecolor": "none", "pad": 2.5} if back else None
        style = {"fontsize": size, **style}
        fig.text(x / width, 1 - top / height, text, va="center", ha="left", bbox=box, **style)
    fig.savefig(path, dpi=100, format="png")
    plt.close(fig)

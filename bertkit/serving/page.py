"""`GET /`: a page to try the model in a browser. It posts to the server's own endpoints and
draws the result the way the task reads: label bars for classify, entities marked in the text
for ner, the answer marked in its context for qa, the nearest of a list of texts for embed, and
the filled-in words for mlm-adapt. `/?text=...&context=...` fills the boxes and runs, so a
link can show a result. Self-contained: no script or style from elsewhere."""

from __future__ import annotations

import html
import json
import re
from importlib import resources

# the second box: what it holds for each task (None: no second box)
_SECOND = {"qa": "Context (the text to find the answer in)", "embed": "Texts to rank (one a line)"}


def page(describe: dict) -> str:
    """The page, with the model's description (`Predictor.describe`) built in."""
    task = describe["task"]
    first = {"qa": "Question"}.get(task, "Text")
    second = _SECOND.get(task)
    if second is None and len(describe.get("fields", [])) > 1:
        second = f"Second text ({describe['fields'][1]})"
    boxes = f'<label for="text">{first}</label><textarea id="text" rows="4"></textarea>'
    if second:
        boxes += f'<label for="context">{html.escape(second)}</label><textarea id="context" rows="6"></textarea>'
    labels = describe.get("labels") or []
    meta = f"{describe['task']} · {describe['runtime']}" + (f" · labels: {', '.join(labels[:12])}" if labels else "")
    data = json.dumps(describe).replace("</", "<\\/")
    filled = {"TITLE": html.escape(describe["model"]), "META": html.escape(meta), "BOXES": boxes, "DATA": data}
    template = resources.files("bertkit.serving").joinpath("page.html").read_text(encoding="utf-8")
    # one pass, so nothing filled in is read again as a marker
    return re.sub(r"@@([A-Z]+)@@", lambda found: filled[found.group(1)], template)

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
from urllib.parse import quote

# the second box: what it holds for each task (None: no second box)
_SECOND = {"qa": "Context (the text to find the answer in)", "embed": "Texts to rank (one a line)"}


def page(describe: dict, served: list[str] | None = None) -> str:
    """The page, with the model's description (`Predictor.describe`) built in. `served`: the names
    of every model of a server that has several; the page then names its model in each request
    (such a server answers no request that does not) and links to the others' pages."""
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
    if served:
        links = [_link(name, name == describe["model"]) for name in served]
        meta = html.escape(meta) + " · models: " + " · ".join(links)
    else:
        meta = html.escape(meta)
    data = json.dumps({**describe, "name": describe["model"] if served else None}).replace("</", "<\\/")
    filled = {"TITLE": html.escape(describe["model"]), "META": meta, "BOXES": boxes, "DATA": data}
    template = resources.files("bertkit.serving").joinpath("page.html").read_text(encoding="utf-8")
    # one pass, so nothing filled in is read again as a marker
    return re.sub(r"@@([A-Z]+)@@", lambda found: filled[found.group(1)], template)


def _link(name: str, here: bool) -> str:
    """A served model's name on a page: plain for the page's own, else a link to its page."""
    return html.escape(name) if here else f'<a href="/?model={quote(name)}">{html.escape(name)}</a>'

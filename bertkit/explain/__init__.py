"""`bertkit explain`: which words of a text made a model decide as it did.

`attribution.py` holds the two methods (integrated gradients over the word embeddings, and
occlusion of whole words), `inputs.py` turns a text into the model's input with its words,
`targets.py` is what explain asks of a task (an `Explainer`: how a text is read, which scores are
explained: a label's logit, an entity's tags, an answer's start and end), each task's own in
`bertkit/tasks/<task>/explaining.py`; `render.py` shows the result (terminal, HTML, PNG) and `run.py` ties them to the
command.
"""

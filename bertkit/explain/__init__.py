"""`bertkit explain`: which words of a text made a model decide as it did.

`attribution.py` holds the two methods (integrated gradients over the word embeddings, and
occlusion of whole words), `inputs.py` turns a text into the model's input with its words,
`targets.py` says what is explained for each task (a label's logit, an entity's tags, an answer's
start and end), `render.py` shows the result (terminal, HTML, PNG) and `run.py` ties them to the
command.
"""

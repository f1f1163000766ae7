"""What every metric module of bertkit shares: an `evaluate.Metric` whose info (description, the
inputs it takes, their features, a citation) is four class attributes, so a module is its
`_compute` and those. The modules stay `evaluate` modules, loaded by path as a user would load them
(`evaluate.load("bertkit/core/metrics/ner.py")`); each one imports this module, not the class, so
that `evaluate` finds the module's own class as its metric."""

from __future__ import annotations

import datasets

from bertkit.core.metrics import import_evaluate

evaluate = import_evaluate()


def features(**kinds) -> datasets.Features:
    """Features of plain columns by their value type: `features(predictions="int64", ...)`."""
    return datasets.Features({name: datasets.Value(kind) for name, kind in kinds.items()})


class Metric(evaluate.Metric):
    description = ""
    inputs = ""  # what `compute` takes
    citation = ""
    features: datasets.Features

    def _info(self):
        return evaluate.MetricInfo(
            description=self.description, citation=self.citation, inputs_description=self.inputs, features=self.features
        )

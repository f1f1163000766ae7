"""`bertkit select`: the texts of an unlabelled pool whose labels would teach a model most."""

from bertkit.selection.run import SelectOptions, select
from bertkit.selection.strategies import DEFAULT_STRATEGY, STRATEGIES

__all__ = ["DEFAULT_STRATEGY", "STRATEGIES", "SelectOptions", "select"]

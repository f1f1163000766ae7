"""The `tune:` section: what `bertkit tune` searches (config keys with a range or a list of
choices) and how (the metric, the sampler's random start, the pruner). `bertkit train` reads
the section and ignores it, so a tuned config (`best.yaml`) trains as it is."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, model_validator

from bertkit.core.errors import did_you_mean
from bertkit.core.settings import Section


class SearchRange(Section):
    """One searched key: a range (`low`, `high`, optionally `log` or `step`) or `choices`."""

    # int | float keeps what was written: a range written in integers is sampled as integers
    low: int | float | None = Field(None, description="smallest value of a range")
    high: int | float | None = Field(None, description="largest value of a range")
    log: bool = Field(False, description="sample the range on a log scale (learning rates)")
    step: int | float | None = Field(
        None, gt=0, description="sample only low, low + step, ... (integers when low, high and step are)"
    )
    choices: list[Any] | None = Field(None, description="the values to choose from, e.g. [16, 32]")

    @model_validator(mode="after")
    def _one_kind(self) -> SearchRange:
        ranged = self.low is not None or self.high is not None
        if self.choices is not None:
            if ranged or self.log or self.step:
                raise ValueError("give either choices or a range (low, high), not both")
            if not self.choices:
                raise ValueError("choices is empty; list two or more values")
            return self
        if self.low is None or self.high is None:
            raise ValueError("give a range as {low: A, high: B} (log: true for a log scale) or choices: [A, B]")
        if self.low >= self.high:
            raise ValueError(f"low ({self.low:g}) must be below high ({self.high:g})")
        if self.log and self.low <= 0:
            raise ValueError(f"a log scale needs low above 0 (got {self.low:g})")
        if self.log and self.step:
            raise ValueError("log and step do not go together: a stepped range is sampled evenly")
        return self

    @property
    def integer(self) -> bool:
        bounds = (self.low, self.high, *([self.step] if self.step is not None else []))
        return self.choices is None and all(isinstance(b, int) and not isinstance(b, bool) for b in bounds)

    def describe(self) -> str:
        if self.choices is not None:
            return "one of " + ", ".join(str(c) for c in self.choices)
        kind = "integers " if self.integer else ""
        scale = ", log scale" if self.log else f", step {self.step:g}" if self.step else ""
        return f"{kind}{self.low:g} to {self.high:g}{scale}"


class TuneConfig(Section):
    """How `bertkit tune` searches. `space` names config keys; left out, each task has a default
    space centred on its measured defaults (docs/tune.md)."""

    space: dict[str, SearchRange] | None = Field(
        None,
        description="the searched keys, e.g. {train.learning_rate: {low: 1.0e-5, high: 1.0e-3, log: true}, "
        "train.batch_size: {choices: [16, 32]}}; the task's default space (learning rates, warmup, batch size, "
        "epochs, weight decay) when null",
    )
    metric: str | None = Field(
        None,
        description="validation metric the study optimises (also each trial's train.metric_for_best_model); "
        "train.metric_for_best_model, else the task's own, when null",
    )
    # Optuna's default of 10 random trials is meant for studies of 100+; with the 12-20 trials a
    # CPU affords, 5 random ones leave most of the budget to TPE.
    random_trials: int = Field(5, ge=1, description="trials sampled at random before TPE models the results")
    pruner: Literal["median", "none"] = Field(
        "median", description="stop a trial whose validation metric lags the median of earlier trials at the "
        "same evaluation (median), or never (none)"
    )
    # MedianPruner compares a trial with finished ones: with fewer than 3 the median says little.
    prune_after_trials: int = Field(3, ge=0, description="finished trials before any trial is pruned")
    # The first evaluation of a fine-tuning run is noisy (warmup): judge from the second on.
    prune_after_evaluations: int = Field(1, ge=0, description="evaluations of a trial before it may be pruned")

    def check_keys(self, sections: dict) -> None:
        """Each searched key against the config's sections (`{name: its pydantic class}`)."""
        if self.space is not None and not self.space:
            raise ValueError("space is empty; name one or more keys, or leave space out for the task's default")
        for key, searched in (self.space or {}).items():
            check_searched_key(key, searched, sections)


def check_searched_key(key: str, searched: SearchRange, sections: dict) -> None:
    """`key` must be a `section.key` of the config holding a number (or, for choices, any value)
    that each end of the range, and each choice, is valid for."""
    from pydantic import ValidationError


    section, _, name = key.partition(".")
    if section == "tune" or not name or "." in name:
        raise ValueError(f"space key '{key}': name a key as section.key, e.g. train.learning_rate")
    if section not in sections:
        raise ValueError(f"space key '{key}': no section '{section}'{did_you_mean(section, list(sections))}")
    model = sections[section]
    if name not in model.model_fields:
        hint = did_you_mean(name, list(model.model_fields))
        raise ValueError(f"space key '{key}': {section} has no key '{name}'{hint}")
    annotation = str(model.model_fields[name].annotation)
    if searched.choices is None and not ("int" in annotation or "float" in annotation):
        raise ValueError(f"space key '{key}' is not a number; search it with choices: [...]")
    if searched.choices is None and "float" not in annotation and not searched.integer:
        raise ValueError(f"space key '{key}' is a whole number: write low, high (and step) as integers")
    values = searched.choices if searched.choices is not None else [searched.low, searched.high]
    if searched.integer:
        values = [int(v) for v in values]
    for value in values:
        try:
            model.model_validate({name: value})
        except ValidationError as err:
            problem = "; ".join(e["msg"] for e in err.errors())
            raise ValueError(f"space key '{key}': {value!r} is not a valid value: {problem}") from None

"""`RunConfig`: what the shared machinery and the tasks read of a run's config, as a type. The
config class itself (`bertkit.config.Config`) is made above them, from every registered task's
section, so code below it names this protocol in its annotations instead: the type points down
the layers, as the imports do, and the class satisfies it."""

from __future__ import annotations

from typing import Protocol, TypeVar

from bertkit.core.data_settings import DataConfig
from bertkit.core.settings import ModelConfig, Section, TrainConfig
from bertkit.core.tune_settings import TuneConfig

S = TypeVar("S", bound=Section)


class RunConfig(Protocol):
    task: str
    model: ModelConfig
    data: DataConfig
    train: TrainConfig
    tune: TuneConfig
    output_dir: str

    def settings(self) -> Section:
        """The section of this run's own task."""

    def section(self, kind: type[S]) -> S:
        """The task section whose settings class is `kind`."""

    def dump(self) -> dict:
        """The config as plain data, as a config file holds it."""

    def model_copy(self, *, update: dict | None = None, deep: bool = False) -> RunConfig:
        """A copy with `update` set (pydantic's)."""

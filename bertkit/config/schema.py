"""The whole config: the common sections and one per registered task (`Config`, rebuilt when a task
is registered), and the default a key takes when a config leaves it out."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field, create_model, field_validator, model_validator

from bertkit.config.sections import DataConfig, ModelConfig, Section, TrainConfig, section_names
from bertkit.config.tune_section import TuneConfig
from bertkit.learning_rates import AUTO, StepScaledRate
from bertkit.tasks import registry


class RunConfig(Section):
    """What every run has; `Config` adds one section per registered task (`_build`)."""

    task: str = Field("classify", description="the job: a task of `bertkit train --help` (classify, ner, qa, ...)")
    model: ModelConfig = Field(default_factory=ModelConfig, description="the model to start from")
    data: DataConfig = Field(default_factory=DataConfig, description="where the examples come from")
    train: TrainConfig = Field(default_factory=TrainConfig, description="how to train")
    tune: TuneConfig = Field(
        default_factory=TuneConfig, description="what `bertkit tune` searches (bertkit train ignores it)"
    )
    output_dir: str = Field("outputs/run", description="where the trained model bundle goes")

    @model_validator(mode="before")
    @classmethod
    def _empty_sections(cls, value: Any) -> Any:
        # `mlm:` with nothing under it is an empty section in YAML terms, not an error
        if not isinstance(value, dict):
            return value
        value = {k: {} if v is None and k in (*section_names(), "tune") else v for k, v in value.items()}
        task = value.get("task", "classify")
        defaults = registry.record(task).defaults if task in registry.names() else {}
        train = value.get("train")
        if isinstance(train, dict) and train.get("adapter") is not None and "learning_rate" not in train:
            rule = registry.record(task).adapter_learning_rate if task in registry.names() else None
            if rule is not None:  # an adapter learns at its own measured rate (`rate_rule`, docs/benchmarks.md)
                value["train"] = {**train, "learning_rate": AUTO}
        for (section, key), default in defaults.items():
            given = value.setdefault(section, {})
            if isinstance(given, dict):
                value[section] = {key: default, **given}
            elif isinstance(given, BaseModel):
                value[section] = given.model_copy(update={} if key in given.model_fields_set else {key: default})
        return value

    @model_validator(mode="after")
    def _derived(self) -> RunConfig:
        if self.train.adapter is not None:  # first: a task that takes none is told so before its own checks
            check_adapter(self)
        for item in registry.records():
            derive = getattr(getattr(self, item.section, None), "derive", None)
            if derive is not None:
                derive(self)
        if self.model.name is None:  # only distill fills it in (with its teacher)
            raise ValueError("model.name: null; give a hub id or a local model directory")
        auto = [k for k in ("learning_rate", "head_learning_rate") if getattr(self.train, k) == AUTO]
        rule = self.rate_rule()
        if auto and (rule is None or ("head_learning_rate" in auto and rule.head is None)):
            raise ValueError(
                f"train.{auto[-1]}: auto, but task {self.task} has no measured rule for it; give a number"
            )
        return self

    def rate_rule(self) -> StepScaledRate | None:
        """What `train.learning_rate: auto` follows: the task's rule (distill: its teacher task's), or
        with `train.adapter` the task's rule for adapters."""
        record = registry.record(self.task)
        if self.train.adapter is not None and record.adapter_learning_rate is not None:
            return record.adapter_learning_rate
        if record.learning_rate is not None:
            return record.learning_rate
        borrowed = getattr(getattr(self, record.section, None), "rate_task", None)
        return registry.record(borrowed).learning_rate if borrowed in registry.names() else None

    @field_validator("output_dir")
    @classmethod
    def _home(cls, value: str) -> str:
        from bertkit.config.sections import home_path

        return home_path(value)

    @field_validator("tune")
    @classmethod
    def _searched_keys(cls, value: TuneConfig) -> TuneConfig:
        sections = {name: model_of(f.annotation) for name, f in cls.model_fields.items() if name != "tune"}
        value.check_keys({name: model for name, model in sections.items() if model is not None})
        return value

    @field_validator("task")
    @classmethod
    def _known_task(cls, value: str) -> str:
        if value not in registry.names():
            raise ValueError(f"unknown task '{value}'; choose one of {', '.join(registry.names())}")
        return value

    def settings(self):
        """The section of this run's own task."""
        return getattr(self, registry.record(self.task).section)

    def dump(self) -> dict:
        data = self.model_dump(mode="json")
        data["output_dir"] = data.pop("output_dir")  # last, as config files have it
        return data


# why a task takes no adapter (a task whose record has no adapter_learning_rate)
NO_ADAPTER = {
    "mlm-adapt": "domain adaptation is meant to change the base model itself; adapt it in full, then train "
    "adapters of other tasks on the result",
    "distill": "the student is a new, smaller model trained in full; distil first, then train adapters on it",
    "rerank": "adapters were not measured for cross-encoders yet; train the reranker in full",
}


def check_adapter(cfg: RunConfig) -> None:
    """train.adapter fits the task and the other training settings (a ValueError names the key)."""
    if registry.record(cfg.task).adapter_learning_rate is None:
        why = NO_ADAPTER.get(cfg.task, "this task has no adapter support")
        raise ValueError(f"train.adapter: the {cfg.task} task takes no adapter: {why}. Remove train.adapter")
    if cfg.model.random_init:
        raise ValueError("train.adapter: an adapter adapts pretrained weights; remove it or model.random_init")
    for key in ("freeze_embeddings", "freeze_layers"):
        if getattr(cfg.train, key):
            raise ValueError(f"train.{key}: with train.adapter the whole base is frozen already; remove {key}")


def _build() -> type[RunConfig]:
    """The config schema: the common sections and one per registered task."""
    sections = {}
    for item in registry.records():
        settings = item.settings_class()
        sections[item.section] = (
            settings,
            Field(default_factory=settings, description=f"settings of the {item.name} task"),
        )
    return create_model("Config", __base__=RunConfig, **sections)


def _rebuild() -> None:
    global Config
    Config = _build()




def default_of(task: str, section: str, key: str) -> Any:
    """The value `section.key` takes in a `task` config that leaves it out: the task's measured
    default (its registry record), else the field's own."""
    defaults = registry.record(task).defaults
    if (section, key) in defaults:
        return defaults[(section, key)]
    return model_of(Config.model_fields[section].annotation).model_fields[key].get_default(call_default_factory=True)


def model_of(annotation) -> type[BaseModel] | None:
    import typing

    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    for arg in typing.get_args(annotation):
        found = model_of(arg)
        if found:
            return found
    return None


Config = _build()
registry.on_change(_rebuild)

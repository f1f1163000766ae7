"""The `distill:` section: the teacher and the student's shape (bertkit/tasks/distill)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

from pydantic import Field, PrivateAttr, field_validator

from bertkit.core.settings import Section, home_path
from bertkit.tasks import registry

if TYPE_CHECKING:
    from bertkit.core.run_config import RunConfig


class DistillConfig(Section):
    teacher: str | None = Field(
        None, description="the teacher: a bertkit classify or ner bundle (required with task: distill)"
    )
    student_layers: list[int] | None = Field(
        None,
        description="encoder layers of model.name kept in the student, e.g. [0, 2, 4] (DistilBERT's every other "
        "layer); null keeps all",
    )
    # 2.0: a soft but not flat target (DistilBERT trained at 2.0); the SST-2 bench (docs/distill.md) compares values
    temperature: float = Field(2.0, gt=0, description="softmax temperature of the soft targets (teacher and student)")
    # 0.5: equal weight to the labels and the teacher; docs/distill.md reports the SST-2 bench's choices
    alpha: float = Field(
        0.5,
        ge=0,
        le=1,
        description="weight of the hard-label loss: loss = (1 - alpha) * T^2 * KL(teacher_T || student_T) + "
        "alpha * hard loss",
    )
    teacher_batch_size: int = Field(64, ge=1, description="examples per batch when the teacher scores the data")
    _teacher_task: str | None = PrivateAttr(None)  # whose learning-rate rule `auto` follows

    @property
    def rate_task(self) -> str | None:
        return self._teacher_task

    @field_validator("student_layers")
    @classmethod
    def _sorted_layers(cls, value: list[int] | None) -> list[int] | None:
        if value is not None:
            if not value:
                raise ValueError("an empty list; name the layers to keep, e.g. [0, 2, 4], or null for all")
            if any(i < 0 for i in value) or any(b <= a for a, b in zip(value, value[1:], strict=False)):
                raise ValueError("layer indices must be 0 or more, in increasing order, each once, e.g. [0, 2, 4]")
        return value

    def derive(self, run: RunConfig) -> None:
        """distill: a teacher is required and the student starts from it unless model.name says
        otherwise; other tasks read no data.unlabeled."""
        if run.task != "distill":
            if run.data.unlabeled:
                raise ValueError("data.unlabeled: only task: distill reads unlabelled text; remove it")
            return
        if not self.teacher:
            raise ValueError("distill.teacher: required; give the folder of a bertkit classify or ner bundle")
        self.teacher = home_path(self.teacher)
        if not Path(self.teacher).is_dir():  # before model.name falls back to it and is looked up on the Hub
            raise ValueError(
                f"distill.teacher: {self.teacher}: no such folder; give the folder of a bertkit classify or ner bundle"
            )
        if run.model.name is None:
            run.model.name = self.teacher
        facts = _teacher_facts(self.teacher)
        self._teacher_task = facts.get("task")
        length = facts.get("max_length")
        if "max_length" not in run.model.model_fields_set and isinstance(length, int) and length >= 8:
            run.model.max_length = length  # the teacher's, when left out

        if facts.get("task") in registry.names():  # the teacher task's measured defaults (learning rate)
            for (section, key), value in registry.record(facts["task"]).defaults.items():
                part = getattr(run, section, None)
                if isinstance(part, Section) and key not in part.model_fields_set:
                    setattr(part, key, value)



def _teacher_facts(folder: str) -> dict:
    """A teacher bundle's bertkit.json, or {} when it has none (the task then says what is
    wrong with the teacher)."""
    from pathlib import Path

    try:
        facts = json.loads((Path(folder) / "bertkit.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return facts if isinstance(facts, dict) else {}


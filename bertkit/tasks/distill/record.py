"""distill's registry record: its `task:` name and `bertkit train` sub-command, its config section,
its measured defaults (each with the benchmark it comes from), its pipeline tag and starter values."""

from __future__ import annotations

from bertkit.tasks.registry import TaskRecord

RECORD = TaskRecord(
    name="distill",
    module="bertkit.tasks.distill.task",
    summary="Distillation: a smaller student learns a classify or ner bundle's outputs; the result is a bundle "
    "of the teacher's task.",
    section="distill",
    settings="bertkit.tasks.distill.settings:DistillConfig",
    # the student starts from the teacher itself unless model.name names another start
    # (bench/distill_quality.py: 3 of MiniLM's 6 layers, docs/distill.md)
    defaults={("model", "name"): None},
    starter={
        ("distill", "teacher"): "models/teacher",
        ("distill", "student_layers"): [0, 2, 4],
        ("data", "train"): "data/train.csv",
    },
)

"""The distill task: a training part only, each hook handed to the teacher's task's (classify or
ner: its reading, labels, features, collator and metrics) except the student's start (layers
kept, `student.py`) and the loss (`losses.py`). The run's description is the teacher task's, so
the bundle written is an ordinary classify or ner bundle, predicted, evaluated, explained and
exported as one: distill has no prediction, evaluation or export part of its own."""

from __future__ import annotations

from typing import TYPE_CHECKING

from bertkit.core import models
from bertkit.core.errors import BertkitError
from bertkit.core.tokenization import load_tokenizer
from bertkit.tasks import get_task
from bertkit.tasks.contract import Task, Training
from bertkit.tasks.distill import losses
from bertkit.tasks.distill.settings import DistillConfig
from bertkit.tasks.distill.student import check_layers, check_vocabulary, keep_layers, layer_count
from bertkit.tasks.distill.teacher import (
    UNLABELED,
    Teacher,
    check_labels,
    check_pairs,
    read_unlabeled,
    teacher_logits,
    teacher_of,
    with_unlabeled,
)

if TYPE_CHECKING:
    from bertkit.core.run_config import RunConfig


def _training_of(info):
    """The teacher task's training part (the description names the teacher's task)."""
    return get_task(info["task"]).training


class DistillTraining(Training):

    def teacher(self, cfg: RunConfig):
        """`teacher_of(cfg)`, read once per run: load, setup, the tokenizer, the model and the
        collator all ask for it (the cache holds the config it was read for)."""
        cached = getattr(self, "_teacher", None)
        if cached is None or cached[0] is not cfg:
            self._teacher = (cfg, teacher_of(cfg))
        return self._teacher[1]

    # ------------------------------------------------------------ training

    def load(self, cfg: RunConfig):
        teacher = self.teacher(cfg)
        splits = teacher.task.training.load(teacher.cfg)
        unlabeled = read_unlabeled(cfg.data.unlabeled, teacher)
        if unlabeled:
            splits["train"] = with_unlabeled(splits["train"], unlabeled, teacher)
        return splits

    def setup(self, ds, cfg: RunConfig) -> dict:

        teacher = self.teacher(cfg)
        d = cfg.section(DistillConfig)
        if d.student_layers is not None:  # refused now, not after the teacher has scored everything
            start = models.resolve(cfg.model.name, cfg.model.revision)
            check_layers(d.student_layers, layer_count(start, cfg.model.trust_remote_code), cfg.model.name)
        info = teacher.task.training.setup(ds, teacher.cfg)
        check_labels(info, teacher)
        check_pairs(info, teacher)
        unlabeled = sum(ds["train"][UNLABELED]) if UNLABELED in ds["train"].column_names else 0
        info["distillation"] = {
            "teacher": teacher.path,
            "teacher_base_model": teacher.info.get("base_model"),
            "teacher_metrics": teacher.info.get("metrics"),
            "student_start": cfg.model.name,
            "student_layers": d.student_layers,
            "temperature": d.temperature,
            "alpha": d.alpha,
            "unlabeled": cfg.data.unlabeled,
            "unlabeled_examples": unlabeled,
            "labelled_examples": len(ds["train"]) - unlabeled,
            "teacher_batch_size": d.teacher_batch_size,
        }
        return info

    def inputs(self, cfg: RunConfig) -> list[str]:
        return [cfg.section(DistillConfig).teacher]

    def metric_names(self, info) -> list[str]:
        return _training_of(info).metric_names(info)

    def best_metric(self, info) -> str:
        return _training_of(info).best_metric(info)

    def new_tokenizer(self, ds, cfg: RunConfig):
        """The teacher's tokenizer: the student must read the same tokens."""

        teacher = self.teacher(cfg)
        if cfg.model.tokenizer:
            raise BertkitError("model.tokenizer: a student uses the teacher's tokenizer; remove the key")
        tokenizer = load_tokenizer(teacher.path)
        if cfg.model.name != cfg.section(DistillConfig).teacher:

            start = models.resolve(cfg.model.name, cfg.model.revision)
            check_vocabulary(tokenizer, start, teacher.path, cfg.model.revision, cfg.model.trust_remote_code)
        return tokenizer

    def tokenizer_facts(self, tokenizer, info) -> dict:
        return _training_of(info).tokenizer_facts(tokenizer, info)

    def prepare(self, ds, tokenizer, info):
        """The teacher task's features, and for training: the teacher's logits on each, the labels
        as prepared, whether the example was labelled, and the row number in place of the label."""

        task = get_task(info["task"])
        features = task.training.prepare(ds, tokenizer, info)
        train = features["train"]
        path = info["distillation"]["teacher"]
        teacher = Teacher(path, {"task": info["task"]}, task, None)
        logits = teacher_logits(teacher, tokenizer, train, info["distillation"]["teacher_batch_size"])
        flags = ds["train"][UNLABELED] if UNLABELED in ds["train"].column_names else [False] * len(ds["train"])
        gold = train["labels"]
        if info["task"] == "ner":
            owners = train["example"]
            labelled = [not flags[e] for e in owners]
            if any(row[0] != losses.IGNORE for row in gold):
                raise AssertionError("ner features must leave their first position ([CLS]) unlabelled")
            carried = [[i, *row[1:]] for i, row in enumerate(gold)]
        else:
            labelled = [not f for f in flags]
            carried = list(range(len(train)))
        train = train.remove_columns("labels").add_column("labels", carried)
        train = train.add_column(losses.TEACHER_COLUMN, [row.tolist() for row in logits])
        train = train.add_column(losses.GOLD_COLUMN, gold)
        features["train"] = train.add_column(losses.LABELLED_COLUMN, [int(x) for x in labelled])
        return features

    def build_model(self, source: str, info, cfg: RunConfig):

        teacher = self.teacher(cfg)
        model = teacher.task.training.build_model(source, info, teacher.cfg)
        return keep_layers(model, cfg.section(DistillConfig).student_layers, cfg.model.name)

    def collator(self, tokenizer, cfg: RunConfig):
        teacher = self.teacher(cfg)
        return teacher.task.training.collator(tokenizer, teacher.cfg)

    def loss(self, info, cfg: RunConfig, train):
        kind = "ner" if info["task"] == "ner" else info["problem_type"]
        settings = cfg.section(DistillConfig)
        return losses.trainer_loss(kind, train, settings.temperature, settings.alpha)

    def metric_fn(self, info, features, examples):
        return _training_of(info).metric_fn(info, features, examples)

    def calibrates(self, info, cfg: RunConfig) -> bool:
        return _training_of(info).calibrates(info, self.teacher(cfg).cfg)

    def calibrate(self, predictions: dict, info, cfg: RunConfig) -> dict:
        return _training_of(info).calibrate(predictions, info, self.teacher(cfg).cfg)

    def data_warnings(self, info):
        return _training_of(info).data_warnings(info)


# a student is a bundle of its teacher's task: no prediction, evaluation or export of its own
TASK = Task(
    name="distill", auto_model="AutoModel", training=DistillTraining(), prediction=None, evaluation=None, export=None
)

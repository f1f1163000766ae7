"""The `qa:` section: the settings of extractive question answering (bertkit/tasks/qa)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

from pydantic import Field

from bertkit.core.settings import Section, derived_doc_stride

if TYPE_CHECKING:
    from bertkit.core.run_config import RunConfig


class QaConfig(Section):
    question_field: str = Field("question", description="flat JSON data: field with the question")
    context_field: str = Field("context", description="flat JSON data: field with the context passage")
    id_field: str = Field("id", description="flat JSON data: field with the question id")
    answers_field: str = Field(
        "answers", description="flat JSON data: {text: [...], answer_start: [...]} or a list of {text, answer_start}"
    )
    version_2: bool | None = Field(
        None, description="questions may have no answer (SQuAD v2); detected from the training data when null"
    )
    doc_stride: int | None = Field(
        None, ge=0, description="tokens shared by consecutive windows of a long context; max_length / 3 when null"
    )
    max_question_length: int = Field(64, ge=1, description="questions are cut to this many tokens")
    n_best: int = Field(20, ge=1, description="start and end candidates considered per window")
    max_answer_length: int = Field(30, ge=1, description="longest answer in tokens")
    null_score_diff_threshold: float = Field(
        0.0, description="v2: answer nothing when the null score beats the best answer by more than this"
    )
    f1_unit: Literal["auto", "word", "char"] = Field(
        "auto",
        description="F1 over words (SQuAD) or characters (JSQuAD); auto: characters when the contexts are "
        "mostly Chinese / Japanese characters",
    )

    def derive(self, run: RunConfig) -> None:
        """Settings that follow others when left out (called once the whole config is read)."""
        if self.doc_stride is None:
            self.doc_stride = derived_doc_stride(run.model.max_length)


"""What `bertkit inspect` looks at in mlm-adapt data: the lines of text."""

from __future__ import annotations

from typing import TYPE_CHECKING

from bertkit.core.run_info import RunInfo
from bertkit.tasks.contract import Inspection
from bertkit.tasks.contract.inspection import View

if TYPE_CHECKING:
    from bertkit.core.run_config import RunConfig


class MlmInspection(Inspection):
    def view(self, split, cfg: RunConfig, info: RunInfo):

        return View(list(split["text"]))

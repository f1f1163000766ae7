"""A run whose numbers stop being finite stops there, and publishes nothing.

A learning rate far too high (or data that overflows) makes the loss NaN or infinite, and from then
on every weight is NaN: such a model predicts one class for everything and writes `NaN` scores. The
Trainer would go on to the end and save it. `DivergenceGuard` stops the run at the step where it
happens, for every task (it watches the shared Trainer, not a task):

- the training loss of every step (each micro-batch under gradient accumulation);
- the loss of every evaluation batch (validation during training, each split scored after it);
- the gradient norm of every optimizer step, as clipping computes it: an infinite norm scales the
  update to nothing, so the model stops learning while its loss stays finite (an extreme
  `train.adapter.alpha` did that at every step); under fp16 it is the loss scaler's to skip;
- the weights, before every checkpoint is saved (so `--resume` never continues from a diverged
  checkpoint) and once more before the bundle is written (`check_weights`): an overflow in the
  optimizer can make a weight infinite while the loss of that step was still finite.

With `precision: fp16` a step whose loss is not finite and that the loss scaler skipped (its
weights unchanged) is the scaler's ordinary work, not divergence; its weights are still checked.

On a CUDA GPU, reading a loss on the host makes the host wait for the GPU every step, which leaves
the GPU idle while the host prepares the next one. There (except under fp16, whose loss scaler
reads every step anyway) the guard keeps the first bad step and its loss on the GPU and reads them
at the next boundary: a step that logs, evaluates or saves, an epoch's end, the last step. The run
still stops naming the step where the loss stopped being finite, before that loss is logged, any
evaluation runs or any checkpoint is saved; only the steps up to the boundary are spent first.
The losses of an evaluation's batches are read once, when the evaluation ends.
"""

from __future__ import annotations

from bertkit.core.errors import BertkitError
from bertkit.core.models import weights_problem
from bertkit.core.progress import callback_base

ADVICE = "Nothing was published. Lower train.learning_rate and run again"


def advice(cfg, precision: str) -> str:
    """What to change: the learning rates this run used, by their keys."""

    def shown(rate) -> str:
        return f"{rate:g}" if isinstance(rate, float | int) else str(rate)

    rates = [f"train.learning_rate (it was {shown(cfg.train.learning_rate)})"]
    if cfg.train.head_learning_rate is not None:
        rates.append(f"train.head_learning_rate ({shown(cfg.train.head_learning_rate)})")
    adapter = getattr(cfg.train, "adapter", None)
    if adapter is not None:  # LoRA's update is scaled by alpha / r
        rates.append(f"train.adapter.alpha ({shown(adapter.alpha)}, with r {adapter.r})")
    extra = "; with fp16 precision, try train.precision: bf16 or fp32" if precision == "fp16" else ""
    return f"Nothing was published. Lower {' or '.join(rates)} and run again{extra}"


class TrainingDiverged(BertkitError):
    """The loss or the weights stopped being finite at `step`."""

    def __init__(self, step: int, what: str, advice: str = ADVICE):
        super().__init__(f"training diverged at step {step}: {what}. {advice}")
        self.step, self.what, self.advice = step, what, advice

    def with_checkpoints_in(self, work) -> TrainingDiverged:
        """The same, saying that the run's checkpoints from before the step (all finite) are kept."""
        kept = (
            f". Its checkpoints from before that step are kept in {work}: add --overwrite to start afresh "
            "(--resume would continue with the learning rate schedule they saved)"
        )
        return TrainingDiverged(self.step, self.what, self.advice + kept)


def check_weights(model, step: int, advice: str = ADVICE) -> None:
    problem = weights_problem(model)
    if problem:
        raise TrainingDiverged(step, problem, advice)


class DivergenceGuard(callback_base()):
    """Stops training at the first step whose loss, validation loss or weights are not finite (see
    the module). `watch(trainer)` connects it to the Trainer whose `training_step` reports each
    loss (`trainer.BertkitTrainer`)."""

    def __init__(self, precision: str = "fp32", advice: str = ADVICE, deferred: bool | None = None):
        self.fp16, self.advice = precision == "fp16", advice
        self.trainer = None
        self.pending: tuple[int, float] | None = None  # (step, loss) of this step's first non-finite loss
        self.evaluation: float | None = None  # the first non-finite loss of the evaluation under way
        # losses read at boundaries only (None: when they are on a CUDA GPU and the run is not fp16)
        self.deferred = False if self.fp16 else deferred
        self.first_bad = None  # deferred: the step of the first non-finite loss (0: none), on the loss's device
        self.first_loss = None  # deferred: that loss
        self.norm_pending: tuple[int, str] | None = None  # (step, norm) of this step's norm when not finite
        self.norm_bad = None  # deferred: the step of the first non-finite gradient norm (0: none)

    def watch(self, trainer) -> None:
        self.trainer = trainer
        trainer.guard = self

    def observe(self, loss, step: int, labels=None):
        """The loss of one training micro-batch of optimizer step `step` (counted from 1); returns
        the loss for the Trainer to add to its running total (deferred: a batch with nothing to
        predict counts as 0, as the Trainer's own NaN filter, off then, would have hidden it)."""
        if self.deferred is None:
            self.deferred = loss.device.type == "cuda"
        if self.deferred:
            return self._keep_on_device(loss, step, labels)
        if self.pending is None and not _finite_or_nothing_to_predict(loss, labels):
            self.pending = (step, _shown(loss))
        return loss

    def _keep_on_device(self, loss, step: int, labels):
        import torch

        finite, nothing = torch.isfinite(loss).all(), _nothing_to_predict(labels, loss.device)
        if self.first_bad is None:
            self.first_bad = torch.zeros((), dtype=torch.long, device=loss.device)
            self.first_loss = torch.zeros((), dtype=torch.float32, device=loss.device)
        fresh = ~finite & ~nothing & (self.first_bad == 0)
        self.first_bad = torch.where(fresh, step, self.first_bad)
        self.first_loss = torch.where(fresh, loss.detach().float().mean(), self.first_loss)
        return torch.where(~finite & nothing, torch.zeros_like(loss), loss)

    def observe_grad_norm(self, norm, step: int) -> None:
        """The gradient norm of optimizer step `step` before clipping (the same on every process:
        the gradients were summed across them first). Not finite, clipping scales the update to
        nothing; under fp16 the loss scaler skips such a step, which is its ordinary work."""
        import torch

        if self.fp16 or norm is None:
            return
        norm = norm if isinstance(norm, torch.Tensor) else torch.tensor(float(norm))
        if self.deferred:
            if self.norm_bad is None:
                self.norm_bad = torch.zeros((), dtype=torch.long, device=norm.device)
            fresh = ~torch.isfinite(norm) & (self.norm_bad == 0)
            self.norm_bad = torch.where(fresh, step, self.norm_bad)
        elif self.norm_pending is None and not bool(torch.isfinite(norm)):
            self.norm_pending = (step, _shown(norm))

    def _norm_diverged(self, step: int, value: str) -> TrainingDiverged:
        what = f"the gradient norm is {value}, so clipping scaled the update to nothing and the model stopped learning"
        return TrainingDiverged(step, what, self.advice)

    def check_deferred(self) -> None:
        """Deferred: raise if a loss, or a gradient norm, since the start was not finite (one read of
        the device each)."""
        if not self.deferred:
            return
        step = int(self.first_bad) if self.first_bad is not None else 0
        if _on_any_process(step > 0):
            value = _shown(self.first_loss) if step else "not finite on another process"
            raise TrainingDiverged(step or self.trainer.state.global_step, f"the training loss is {value}", self.advice)
        norm_step = int(self.norm_bad) if self.norm_bad is not None else 0
        if norm_step:
            raise self._norm_diverged(norm_step, "not finite")

    def observe_evaluation(self, loss, labels=None) -> None:
        """The loss of one evaluation (or scoring) batch, when the Trainer computed one (deferred:
        kept on the device, as (any bad so far, the first bad loss), until `check_evaluation`)."""
        if loss is None:
            return
        if self.deferred is None:
            self.deferred = loss.device.type == "cuda"
        if self.deferred:
            import torch

            bad = ~torch.isfinite(loss).all() & ~_nothing_to_predict(labels, loss.device)
            seen, value = self.evaluation or (torch.zeros((), dtype=torch.bool, device=loss.device),) * 2
            value = torch.where(bad & ~seen, loss.detach().float().mean(), value.float())
            self.evaluation = (seen | bad, value)
        elif self.evaluation is None and not _finite_or_nothing_to_predict(loss, labels):
            self.evaluation = _shown(loss)

    def check_evaluation(self, step: int, what: str = "the validation loss") -> None:
        """Raise if a batch of the evaluation that just ended had a loss that was not finite (each
        batch is looked at: the Trainer's mean leaves such batches out when others are finite)."""
        bad, self.evaluation = self.evaluation, None
        if isinstance(bad, tuple):  # deferred: read now, once for the whole evaluation
            bad = _shown(bad[1]) if bool(bad[0]) else None
        if _on_any_process(bad is not None):
            shown = bad if bad is not None else "not finite on another process"
            raise TrainingDiverged(step, f"{what} is {shown}", self.advice)

    def on_step_end(self, args, state, control, model=None, **kwargs):
        last = state.max_steps > 0 and state.global_step >= state.max_steps
        stopping = last or control.should_training_stop
        if self.deferred and (stopping or control.should_log or control.should_evaluate or control.should_save):
            self.check_deferred()
        pending, self.pending = self.pending, None
        skipped = self.fp16 and getattr(getattr(self.trainer, "accelerator", None), "optimizer_step_was_skipped", False)
        if pending is not None and skipped:
            pending = None
        if _on_any_process(pending is not None):  # every process stops, or the others would wait for it
            step, value = pending if pending is not None else (state.global_step, "not finite on another process")
            raise TrainingDiverged(step, f"the training loss is {value}", self.advice)
        norm, self.norm_pending = self.norm_pending, None
        if norm is not None:
            raise self._norm_diverged(*norm)
        if model is not None and (control.should_save or control.should_training_stop or last):
            check_weights(model, state.global_step, self.advice)

    def on_epoch_end(self, args, state, control, model=None, **kwargs):
        """An epoch's checkpoint (save_strategy: epoch) is decided here, after the step's check."""
        self.check_deferred()
        if model is not None and control.should_save:
            check_weights(model, state.global_step, self.advice)

    def on_evaluate(self, args, state, control, metrics=None, **kwargs):
        self.check_evaluation(state.global_step)



def _on_any_process(flag: bool) -> bool:
    """`flag` of this process, or of any process of a distributed run (torchrun, accelerate): a
    loss is each process's own, and one process stopping alone would leave the others waiting for
    it in their next exchange. Weights are the same on every process, so their check needs none."""
    import torch

    distributed = torch.distributed
    if not (distributed.is_available() and distributed.is_initialized()) or distributed.get_world_size() == 1:
        return flag
    device = f"cuda:{torch.cuda.current_device()}" if distributed.get_backend() == "nccl" else "cpu"
    seen = torch.tensor([1 if flag else 0], device=device)
    distributed.all_reduce(seen, op=distributed.ReduceOp.MAX)
    return bool(seen.item())


def _finite_or_nothing_to_predict(loss, labels) -> bool:
    """Whether a batch's loss is finite, or its batch had nothing to predict: every label -100 (a
    masked-LM batch in which no token was drawn for masking, say) gives a NaN loss and zero
    gradients, which is not divergence."""
    import torch

    if bool(torch.isfinite(loss).all()):
        return True
    return isinstance(labels, torch.Tensor) and not labels.is_floating_point() and bool((labels == -100).all())


def _nothing_to_predict(labels, device):
    """`_finite_or_nothing_to_predict`'s second case as a tensor on `device` (no read of the device)."""
    import torch

    if isinstance(labels, torch.Tensor) and not labels.is_floating_point():
        return (labels == -100).all().to(device, non_blocking=True)
    return torch.zeros((), dtype=torch.bool, device=device)


def _shown(loss) -> float:
    return float(loss.detach().float().mean())

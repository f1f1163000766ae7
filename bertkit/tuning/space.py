"""The searched keys: each task's default space, a trial's values, and the config they make."""

from __future__ import annotations

import math

from pydantic import ValidationError

from bertkit.config import Config, config_class
from bertkit.core.errors import BertkitError
from bertkit.core.learning_rates import AUTO
from bertkit.core.tune_settings import SearchRange
from bertkit.tasks import registry
from bertkit.tasks.classify import strategy
from bertkit.tasks.classify.settings import ClassifyConfig

# Learning rates: a quarter to four times the run's own (the config's, else the task's measured
# default). bertkit's benchmarks moved QA from F1 12 to 33 between 5e-5 and 3e-4 (6x), and
# classify / NER settled 2.5x above run_glue's 2e-5: a 16x log range holds such moves around the
# measured value.
LR_SPREAD = 4.0
# A head without its own rate in the config: from half the body's rate to 20 times it (QA's and
# MLM's measured heads run at 10x their body).
HEAD_LOW, HEAD_HIGH = 0.5, 20.0
# Warmup: 0 to 20% of the steps (BERT's paper used 10%; bertkit's defaults are 6% and 10%).
WARMUP = (0.0, 0.2)
# Weight decay: none to 0.1 (AdamW's usual values for BERT fine-tuning are 0 and 0.01).
WEIGHT_DECAY = (0.0, 0.1)


def default_space(cfg: Config) -> dict[str, SearchRange]:
    """The space `bertkit tune` searches when the config's `tune.space` is null, centred on the
    run's own values (the config's, else the task's measured defaults from its registry record)."""
    t = cfg.train
    rate, head = _centre(cfg, t.learning_rate, "base"), _centre(cfg, t.head_learning_rate, "head")
    space = {"train.learning_rate": _around(rate, LR_SPREAD)}
    if registry.record(cfg.task).architecture:  # a task head (embed's encoder has none of its own)
        space["train.head_learning_rate"] = (
            _around(head, LR_SPREAD) if head else SearchRange(low=rate * HEAD_LOW, high=rate * HEAD_HIGH, log=True)
        )
    space["train.warmup_ratio"] = SearchRange(low=WARMUP[0], high=WARMUP[1])
    # half, the same and twice the batch: a batch's effect is through its gradient noise, on a log scale
    batch = t.batch_size
    space["train.batch_size"] = SearchRange(choices=sorted({max(1, batch // 2), batch, batch * 2}))
    if t.max_steps is None:  # with max_steps set, epochs do not count
        # whole epochs from half to one and a half times the run's (at least 1 to 2)
        low = max(1, math.floor(t.epochs / 2))
        space["train.epochs"] = SearchRange(low=low, high=max(low + 1, math.ceil(t.epochs * 1.5)), step=1)
    space["train.weight_decay"] = SearchRange(low=WEIGHT_DECAY[0], high=WEIGHT_DECAY[1])
    return space


def _centre(cfg: Config, value, which: str) -> float | None:
    """A rate to search around: the config's number, or for `auto` the middle (on a log scale) of
    what the task's rule gives, from long runs' base to short runs' highest."""
    if value != AUTO:
        return value
    rule = cfg.rate_rule()
    return getattr(rule, which) * math.sqrt(rule.max_factor)


def _around(value: float, spread: float) -> SearchRange:
    return SearchRange(low=float(f"{value / spread:.3g}"), high=float(f"{value * spread:.3g}"), log=True)


def space_of(cfg: Config, route: str | None = None) -> dict[str, SearchRange]:
    """tune.space, else the default space of the route the run takes (`route`: classify's
    strategy as decided on the data; the contrastive route reads none of fine-tuning's keys)."""
    if cfg.tune.space:
        return cfg.tune.space
    return contrastive_space(cfg) if route == "contrastive" else default_space(cfg)


def contrastive_space(cfg: Config) -> dict[str, SearchRange]:
    """classify's contrastive route: its tuning rate (a quarter to four times the run's), the rounds
    of pairs (half to twice), and the batch (half, the same, twice)."""
    c, batch = cfg.section(ClassifyConfig), cfg.train.batch_size
    return {
        "classify.contrastive_learning_rate": _around(c.contrastive_learning_rate, LR_SPREAD),
        "classify.pair_rounds": SearchRange(low=max(1, c.pair_rounds // 2), high=max(2, c.pair_rounds * 2), step=1),
        "train.batch_size": SearchRange(choices=sorted({max(1, batch // 2), batch, batch * 2})),
    }


def refuse_unused_keys(space: dict, route: str | None, frozen: bool = False) -> None:
    """A searched key the run's route never reads would make every trial the same run: refused,
    once, before the first trial (a space that searches classify.strategy itself is left alone).
    `frozen`: the freezing keys hold the whole encoder in every trial (strategy.frozen_in_every_trial)."""

    if route is None or "classify.strategy" in space:
        return
    unread = {f"{section}.{key}" for section, key in strategy.unread_keys(route, frozen)}
    unused = [key for key in space if key in unread]
    if not unused:
        return
    if frozen and route == strategy.CONTRASTIVE:
        raise BertkitError(
            f"tune.space: classify takes the contrastive route on this data with the whole encoder frozen "
            "(train.freeze_embeddings, and train.freeze_layers holds every layer): it only fits "
            f"the head on the untuned sentence vectors and does not read {', '.join(unused)}, so every trial would "
            "train the same model. Set classify.strategy: finetune to search fine-tuning's keys (its head learns on "
            f"a frozen encoder), or lower train.freeze_layers so that the route tunes the encoder and search its keys "
            f"({strategy.CONTRASTIVE_READS})"
        )
    reads = strategy.CONTRASTIVE_READS if route == strategy.CONTRASTIVE else "the fine-tuning keys"
    raise BertkitError(
        f"tune.space: classify takes the {route} route on this data, which does not read {', '.join(unused)}: "
        f"every trial would train the same model. Search the keys it reads ({reads}), leave tune.space out "
        f"for its default space, or set classify.strategy"
    )


def suggest(trial, space: dict[str, SearchRange]) -> dict:
    """A trial's values, one per searched key (Optuna's parameter names are the config keys)."""
    values = {}
    for key, searched in space.items():
        if searched.choices is not None:
            values[key] = trial.suggest_categorical(key, searched.choices)
        elif searched.integer:
            values[key] = trial.suggest_int(key, searched.low, searched.high, step=searched.step or 1, log=searched.log)
        else:
            values[key] = trial.suggest_float(key, searched.low, searched.high, step=searched.step, log=searched.log)
    return values


def with_values(cfg: Config, values: dict, **top) -> Config:
    """`cfg` with `values` ({"train.learning_rate": 3e-5, ...}) and top-level keys set, checked as
    a whole config."""
    data = cfg.dump()
    for key, value in values.items():
        section, _, name = key.partition(".")
        data[section][name] = value
    data.update(top)
    try:
        return config_class().model_validate(data)
    except ValidationError as err:
        shown = ", ".join(f"{k}={v}" for k, v in values.items())
        problems = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in err.errors())
        raise BertkitError(f"tune.space: {shown} is not valid ({problems}); narrow the range") from None


def check_space(cfg: Config, space: dict[str, SearchRange]) -> None:
    """Every end of every range, and every choice, makes a valid config (before any trial)."""
    for key, searched in space.items():
        ends = searched.choices if searched.choices is not None else [searched.low, searched.high]
        for value in ends:
            with_values(cfg, {key: int(value) if searched.integer else value})


def describe(space: dict[str, SearchRange]) -> list[tuple[str, str]]:
    return [(key, searched.describe()) for key, searched in space.items()]


def distribution(searched: SearchRange):
    """The Optuna distribution `suggest` samples a searched key from."""
    from optuna.distributions import CategoricalDistribution, FloatDistribution, IntDistribution

    if searched.choices is not None:
        return CategoricalDistribution(searched.choices)
    if searched.integer:
        return IntDistribution(int(searched.low), int(searched.high), log=searched.log, step=int(searched.step or 1))
    return FloatDistribution(searched.low, searched.high, log=searched.log, step=searched.step)


def check_study_space(study, name: str, space: dict[str, SearchRange], fresh_hint: str) -> None:
    """Refuse to continue `study` over another space than its trials were sampled from: its
    trials would not be comparable (a key searched now was fixed then, or the other way round),
    and Optuna itself refuses changed choices halfway through a trial."""
    from optuna.trial import TrialState

    sampled: dict = {}
    # finished trials only: a trial another process is running may have suggested some of its keys
    # and not yet the others, which would read as a narrower space. Later trials win: the space as last used
    for trial in study.get_trials(deepcopy=False, states=(TrialState.COMPLETE, TrialState.PRUNED)):
        sampled.update(trial.distributions)
    if not sampled:
        return
    wanted = {key: distribution(searched) for key, searched in space.items()}
    changed = [f"{key}: {_described(sampled.get(key))} → {_described(wanted.get(key))}"
               for key in sorted(sampled.keys() | wanted.keys()) if sampled.get(key) != wanted.get(key)]  # fmt: skip
    if changed:
        raise BertkitError(
            f"study '{name}' searched another space than this config's tune.space:\n  " + "\n  ".join(changed) + "\n"
            f"Set tune.space back to continue the study, or start a new one: {fresh_hint}"
        )


def _described(dist) -> str:
    """A distribution as `SearchRange.describe` words a searched key."""
    from optuna.distributions import CategoricalDistribution, IntDistribution

    if dist is None:
        return "not searched"
    if isinstance(dist, CategoricalDistribution):
        return "one of " + ", ".join(str(c) for c in dist.choices)
    kind = "integers " if isinstance(dist, IntDistribution) else ""
    step = getattr(dist, "step", None)
    scale = ", log scale" if dist.log else f", step {step:g}" if step and not (kind and step == 1) else ""
    return f"{kind}{dist.low:g} to {dist.high:g}{scale}"

"""Length-grouped batches that stay random.

Examples are shuffled, cut into mega-batches of `batch_size * group` examples, sorted by length
inside each, and cut into batches; then the order of all batches is shuffled. Each batch holds
texts of similar length (little padding), while the order in which the model sees short and long
batches stays random. The Hugging Face LengthGroupedSampler, by contrast, serves the batches of
each mega-batch longest first.
"""

from __future__ import annotations

import random
from collections.abc import Iterator

from torch.utils.data import Sampler


class ShuffledLengthGroups(Sampler[int]):
    def __init__(self, lengths: list[int], batch_size: int, seed: int, group: int = 50):
        self.lengths, self.batch_size, self.seed, self.group = list(lengths), batch_size, seed, group
        self.epoch = 0

    def set_epoch(self, epoch: int) -> None:
        self.epoch = epoch

    def batches(self) -> list[list[int]]:
        rng = random.Random(self.seed * 100_003 + self.epoch)
        order = list(range(len(self.lengths)))
        rng.shuffle(order)
        size = self.batch_size * self.group
        batches = []
        for start in range(0, len(order), size):
            mega = sorted(order[start : start + size], key=self.lengths.__getitem__)
            batches += [mega[i : i + self.batch_size] for i in range(0, len(mega), self.batch_size)]
        # The DataLoader cuts the index stream every batch_size: a short batch anywhere but
        # last would shift every later batch off its group.
        full = [b for b in batches if len(b) == self.batch_size]
        rng.shuffle(full)
        return full + [b for b in batches if len(b) < self.batch_size]

    def __iter__(self) -> Iterator[int]:
        batches = self.batches()
        self.epoch += 1  # a new order next time, also when nobody calls set_epoch
        for batch in batches:
            yield from batch

    def __len__(self) -> int:
        return len(self.lengths)

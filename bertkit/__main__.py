"""`python -m bertkit`, also what `accelerate launch -m bertkit` and `torchrun -m bertkit` run."""

from bertkit.cli import main

main()

"""The shared machinery every task and command stands on (see docs/architecture.md)."""

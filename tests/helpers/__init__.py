"""What the tests share that is not a test: tiny models and synthetic data (tiny.py), the fixture
cache (fixture_cache.py), bertkit run in the test's process (in_process.py), refusal checks
(checks.py), the docs test's reader, server and substitutions (docs_*.py), and the index tests'
fake encoder (index_fakes.py), the real programs some tests run against (real_parts.py:
PostgreSQL, Chromium), the launchers and ports of multi-process tests (launch.py). Test files import them as `from helpers.tiny import ...`."""

"""What the tests share that is not a test: tiny models and synthetic data (tiny.py), the fixture
cache (fixture_cache.py), bertkit run in the test's process (in_process.py), refusal checks
(checks.py), the docs test's reader, server and substitutions (docs_*.py), the index tests' fake
encoder (index_fakes.py), the launchers and ports of multi-process tests (launch.py), and the real
programs some tests run against (real_parts.py: PostgreSQL, Chromium). Test files import them as
`from helpers.tiny import ...`."""

"""lazytools' measurements, kept out of the installed package. Run from a clone: `python -m benchmarks [--quick]`.

Sections: tokens and round trips (`run`), search latency (`search`), gateway start-up and overhead (`gateway`),
HTTP throughput (`http`); the long-running soak is `python -m benchmarks.soak`. Tests do not import these modules,
except tests/test_benchmarks.py, which runs them small so they cannot rot.
"""

import sys

LAZYTOOLS = [sys.executable, "-m", "lazytools", "--no-learn"]
"""How a benchmark starts lazytools: with learning off, so its searches and calls never reach the learning store
of the user running it (benchmarks.learning measures learning in its own temporary store)."""

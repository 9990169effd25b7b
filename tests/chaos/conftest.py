"""The seeded fault-injection suite: ``CHAOS_SEED`` replays a run, ``CHAOS_RUNS`` sets its size."""

from __future__ import annotations

import os
import random

import pytest


@pytest.fixture
def chaos_seed(request: pytest.FixtureRequest) -> int:
    """The seed of this run: from CHAOS_SEED, else fresh; printed with any failure."""
    seed = int(os.environ.get("CHAOS_SEED") or random.SystemRandom().randrange(2**32))
    request.node.user_properties.append(("chaos_seed", seed))
    return seed


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]):  # type: ignore[no-untyped-def]
    outcome = yield
    report = outcome.get_result()
    seed = dict(item.user_properties).get("chaos_seed")
    if report.failed and seed is not None:
        report.sections.append(("chaos seed", f"replay with CHAOS_SEED={seed}"))
        report.longrepr = f"{report.longrepr}\n\nchaos seed: CHAOS_SEED={seed}"

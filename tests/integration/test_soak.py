"""A one-minute soak: mixed runs while every kind of service is killed -9, and a reasoner outage.

The same engine as `make soak` (bench/soak.py), shortened: about 60 s of
chaos on a throwaway Postgres database, then every run must have ended, no
tool call may have run twice or been answered with another call's result, no
event number may have been reused, and every stream must have ended with its
run's end. A failure names the invariant and the runs, calls and sequences
that broke it.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.soak import SoakConfig, run_soak
from tests.support.postgres import fresh_postgres_database

pytestmark = pytest.mark.integration

MINUTE = SoakConfig(
    duration_s=60.0,
    clients=4,
    kill_every_s=8.0,
    pause_s=(0.5, 2.0),
    outage_s=15.0,
    settle_s=90.0,
    seed=7,
)


@pytest.mark.timeout(420)
async def test_one_minute_of_kills_leaves_every_run_ended_and_counted_once(tmp_path: Path) -> None:
    async with fresh_postgres_database() as url:
        report = await run_soak(MINUTE, url, tmp_path)
    figures = report.figures
    # The chaos really happened: every kind of service was killed and the reasoner was down a while.
    assert set(figures["kills"]) == {"reasoner", "tools", "gateway"}, figures["kills"]
    assert figures["outage_s"] >= MINUTE.outage_s
    assert figures["runs"]["completed"] > 0, figures["runs"]
    assert report.ok, report.describe()

"""Short runs of the differential fuzzer and the crash harness (issue 11); ``make fuzz``
runs the long ones. Fixed seeds, so a failure here reproduces with the same command:
``python tests/fuzz_differential.py --runs 120 --seed 11`` /
``python tests/crash_harness.py --runs 24 --seed 11``."""

from __future__ import annotations

import pytest

import crash_harness
import fuzz_differential

from _shared import native_available

pytestmark = pytest.mark.skipif(not native_available(), reason="the native extension is not built")


def test_differential_fuzzer_short_run() -> None:
    assert fuzz_differential.run(120, 11) == 0


def test_crash_harness_short_run() -> None:
    failed, totals = crash_harness.run(24, 11)
    assert failed == 0
    assert totals["killed"] > 0 and totals["acked"] > 0

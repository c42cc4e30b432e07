"""Every Python example of the README runs as written (from the repository root)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from _shared import CORPUS
from readme_examples import ROOT, examples


@pytest.mark.parametrize("n", range(len(examples())), ids=lambda n: f"example-{n + 1}")
def test_readme_example_runs(n: int) -> None:
    src = examples()[n]
    if "../shared/" in src and not CORPUS.is_dir():
        pytest.skip(f"the example reads the shared corpus, not found at {CORPUS}")
    p = subprocess.run([sys.executable, "-c", src], cwd=ROOT, capture_output=True, text=True, timeout=120,
                       env={**os.environ, "PYTHONWARNINGS": "default"})
    assert p.returncode == 0, p.stderr

"""The README's Python examples: extracted, run, and type-checked.

``python tests/readme_examples.py --typecheck`` runs mypy over every ```` ```python ````
block of README.md (``make lint`` does); ``tests/test_readme.py`` runs each block as a
user would, from the repository root.
"""

from __future__ import annotations

import re
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"

_BLOCK = re.compile(r"^```python\n(.*?)^```", re.S | re.M)


def examples(text: str | None = None) -> list[str]:
    """The source of every ```` ```python ```` block of the README, in order."""
    return _BLOCK.findall(README.read_text(encoding="utf-8") if text is None else text)


def typecheck() -> int:
    """mypy over each example (as its own module); returns mypy's exit status."""
    from mypy import api

    with tempfile.TemporaryDirectory() as tmp:
        files = []
        for i, src in enumerate(examples(), 1):
            f = Path(tmp) / f"readme_example_{i}.py"
            f.write_text(src, encoding="utf-8")
            files.append(str(f))
        out, err, status = api.run(["--strict", "--no-error-summary", "--pretty", *files])
    sys.stdout.write(out)
    sys.stderr.write(err)
    if status == 0:
        print(f"README examples type-check: {len(files)} blocks, no issues")
    return status


if __name__ == "__main__":
    if sys.argv[1:] != ["--typecheck"]:
        sys.exit("usage: python tests/readme_examples.py --typecheck")
    sys.exit(typecheck())

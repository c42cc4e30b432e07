"""The wheel a user installs: one for every supported Python, installed fresh and run.

``maturin build --release`` (reusing ``make build``'s cargo cache, so nothing is compiled
again) must make exactly one wheel, tagged ``cp310-abi3`` (PyO3's ``abi3-py310``: the
stable ABI). It is installed, with its dependencies from PyPI, into a new virtualenv of
each CPython this machine has among: the one running the tests, and the oldest and the
newest >= 3.10 that pyenv holds. There the installed package (never the checkout) opens a
session that the installed command line generated, builds its context and decodes every
entry on the native backend, and ``sessiontree --version`` / ``info`` run; the answers
must equal the checkout's. ``make wheel-test`` runs this file alone.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import sessiontree
from sessiontree import SessionManager

ROOT = Path(__file__).resolve().parents[1]

# Run by each installed copy, in its own virtualenv, from a folder outside the checkout.
_SMOKE = r"""
import json, sys
import sessiontree
from sessiontree import SessionManager, _sessiontree
with SessionManager.open(sys.argv[1], backend="native") as sm:
    ctx = sm.build_session_context()
    entries = sm.get_entries()
    print(json.dumps({
        "prefix": sys.prefix, "package": sessiontree.__file__, "module": _sessiontree.__file__,
        "version": sessiontree.__version__, "python": list(sys.version_info[:2]),
        "entries": len(entries), "ids": [e["id"] for e in entries][:50], "leaf": sm.leaf_id,
        "roles": [m["role"] for m in ctx.messages],
    }))
"""


def _version_of(python: str) -> tuple[int, int] | None:
    try:
        out = subprocess.run([python, "-c", "import sys; print(*sys.version_info[:2])"],
                             capture_output=True, text=True, timeout=60, check=True).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    major, minor = out.split()
    return int(major), int(minor)


def _pythons() -> dict[tuple[int, int], str]:
    """The interpreters to install into, by version: this one, and pyenv's oldest and
    newest CPython >= 3.10 (each only once)."""
    found: dict[tuple[int, int], str] = {}
    base = getattr(sys, "_base_executable", sys.executable)
    found[sys.version_info[:2]] = base
    pyenv = Path(os.environ.get("PYENV_ROOT") or Path.home() / ".pyenv") / "versions"
    others: dict[tuple[int, int], str] = {}
    for exe in sorted(pyenv.glob("3.*/bin/python3")):
        v = _version_of(str(exe))
        if v is not None and v >= (3, 10):
            others.setdefault(v, str(exe))
    for v in (min(others, default=None), max(others, default=None)):
        if v is not None:
            found.setdefault(v, others[v])
    return found


def _run(cmd: list[str], **kw: object) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(cmd, capture_output=True, text=True, **kw)  # type: ignore[call-overload]
    assert done.returncode == 0, f"{cmd} exited {done.returncode}:\n{done.stdout}\n{done.stderr}"
    return done  # type: ignore[no-any-return]


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("wheels")
    maturin = Path(sys.executable).parent / "maturin"
    cmd = [str(maturin) if maturin.exists() else shutil.which("maturin") or "maturin",
           "build", "--release", "--out", str(out)]
    _run(cmd, cwd=ROOT, timeout=1800)
    wheels = sorted(out.glob("*.whl"))
    assert len(wheels) == 1, wheels
    return wheels[0]


def test_one_wheel_for_every_python(wheel: Path) -> None:
    name = re.fullmatch(r"sessiontree-(?P<v>[^-]+)-(?P<py>[^-]+)-(?P<abi>[^-]+)-(?P<plat>.+)\.whl", wheel.name)
    assert name, wheel.name
    assert (name["v"], name["py"], name["abi"]) == (sessiontree.__version__, "cp310", "abi3"), wheel.name


@pytest.mark.parametrize("version", sorted(_pythons()), ids=lambda v: f"py{v[0]}.{v[1]}")
def test_the_wheel_installs_and_runs(version: tuple[int, int], wheel: Path, tmp_path: Path) -> None:
    venv = tmp_path / "venv"
    _run([_pythons()[version], "-m", "venv", str(venv)], timeout=300)
    bin_ = venv / "bin"
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME")}
    env.update(PATH=f"{bin_}{os.pathsep}{env.get('PATH', '')}", HOME=str(tmp_path),
               SESSIONTREE_CATALOG=str(tmp_path / "catalog.sqlite3"), PIP_DISABLE_PIP_VERSION_CHECK="1")
    _run([str(bin_ / "python"), "-m", "pip", "install", "-q", str(wheel)], env=env, cwd=tmp_path, timeout=900)

    session = tmp_path / "s.jsonl"
    _run([str(bin_ / "sessiontree"), "generate", str(session), "--entries", "400", "--seed", "2"],
         env=env, cwd=tmp_path, timeout=300)
    got = json.loads(_run([str(bin_ / "python"), "-c", _SMOKE, str(session)], env=env, cwd=tmp_path,
                          timeout=300).stdout)
    assert got["prefix"] == str(venv) and got["package"].startswith(str(venv)), got
    assert got["module"].endswith("_sessiontree.abi3.so"), got["module"]
    assert tuple(got["python"]) == version and got["version"] == sessiontree.__version__

    with SessionManager.open(session, backend="native") as sm:  # the checkout's build
        want = sm.get_entries()
        roles = [m["role"] for m in sm.build_session_context().messages]
        assert (got["entries"], got["ids"], got["leaf"], got["roles"]) == (
            len(want), [e["id"] for e in want][:50], sm.leaf_id, roles)
    assert got["entries"] > 300 and "assistant" in got["roles"]

    out = _run([str(bin_ / "sessiontree"), "--version"], env=env, cwd=tmp_path, timeout=60).stdout
    assert out.strip() == f"sessiontree {sessiontree.__version__}"
    info = _run([str(bin_ / "sessiontree"), "info", str(session)], env=env, cwd=tmp_path, timeout=120).stdout
    assert session.name in info and "native" in info, info

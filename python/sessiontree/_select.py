"""Which backend a session uses: ``backend="auto" | "python" | "native"``.

One home for the choice: the argument, else ``$SESSIONTREE_BACKEND``, else ``auto``;
``auto`` is ``native`` when the extension ``sessiontree._sessiontree`` imports. The
manager and the command line both ask here.
"""

from __future__ import annotations

import os
from functools import lru_cache
TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (a warm command's start)

if TYPE_CHECKING:
    from typing import Any

    from ._backend import TreeIndex

__all__ = ["BACKENDS", "backend_name", "extension", "index_class", "native_available", "native_module"]

BACKENDS = ("auto", "python", "native")
"""The accepted backend names."""

ENV = "SESSIONTREE_BACKEND"


@lru_cache(maxsize=1)
def native_available() -> bool:
    """Whether the Rust extension is built and importable (asked once per process)."""
    try:
        from . import _native  # noqa: F401  (imports the extension)
    except ImportError:
        return False
    return True


def backend_name(backend: str | None = None) -> str:
    """The backend a caller asked for, as one of :data:`BACKENDS`.

    Args:
        backend: the argument given; ``None`` or ``""`` means "not given": then
            ``$SESSIONTREE_BACKEND`` decides, else ``"auto"``.

    Returns:
        ``"auto"``, ``"python"`` or ``"native"`` (``auto`` is not resolved here).

    Raises:
        ValueError: an unknown name, naming where it came from (the argument or the
            environment variable).
    """
    from_env = not backend
    raw = os.environ.get(ENV, "") if from_env else backend
    choice = raw.strip().lower() if isinstance(raw, str) else raw
    choice = choice or "auto"
    if choice in BACKENDS:
        return str(choice)
    if from_env:
        raise ValueError(f"{ENV} must be 'auto', 'python' or 'native', not {raw!r}")
    raise ValueError(f"backend must be 'auto', 'python' or 'native', not {backend!r}")


def index_class(backend: str | None = None) -> type[TreeIndex]:
    """The :class:`~sessiontree._backend.TreeIndex` implementation for a choice.

    Raises:
        ValueError: an unknown name (see :func:`backend_name`).
        ImportError: ``"native"`` was asked for and the extension is not built.
    """
    choice = backend_name(backend)
    if choice == "auto":
        choice = "native" if native_available() else "python"
    if choice == "native":
        from ._native import NativeIndex

        return NativeIndex
    from ._pure import PythonIndex

    return PythonIndex


def native_module() -> Any:
    """The extension ``sessiontree._sessiontree`` when the native readers are to be used
    (the catalog's, the search's), else ``None`` (``$SESSIONTREE_BACKEND=python``, or no
    extension). A bad variable is the caller's to report: here it means ``auto``."""
    try:
        if backend_name(None) == "python":
            return None
    except ValueError:
        pass
    return extension()


@lru_cache(maxsize=1)
def extension() -> Any:
    """The extension ``sessiontree._sessiontree`` whichever backend is chosen, or ``None``
    when it is not built: for what must not depend on the backend (the HTML export's
    Markdown, ``export/html.py``), where the backend's choice would change the output.
    Looked up once (the view asks for each item of an export)."""
    try:
        import sessiontree._sessiontree as native  # the extension module itself, not the package
    except ImportError:
        return None
    return native

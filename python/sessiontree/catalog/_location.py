"""Where the catalog lives: ``$SESSIONTREE_CATALOG``, else ``catalog.sqlite3`` in
sessiontree's cache folder (``_caches.cache_folder``: ``$XDG_CACHE_HOME/sessiontree/``,
else ``~/.cache/sessiontree/``, the persisted indexes' home too); never inside Pi's
folders."""

from __future__ import annotations

import os

from .._caches import CATALOG_ENV as ENV
from .._caches import CATALOG_FILE as FILE_NAME
from .._caches import OFF, cache_folder, inside_pi_folder, pi_folders
from .._caches import catalog_default_path as default_path

__all__ = ["ENV", "FILE_NAME", "OFF", "cache_path", "default_path", "pi_folders", "resolve"]


def cache_path() -> str:
    """The catalog's own place: ``$XDG_CACHE_HOME/sessiontree/`` (absolute only), else
    ``~/.cache/sessiontree/``, with :data:`FILE_NAME`. Whatever is there is the
    catalog's (a damaged file there is replaced, ``_store``)."""
    return os.path.join(cache_folder(), FILE_NAME)


def resolve(path: str | os.PathLike[str] | None) -> str | None:
    """The catalog file to use.

    Args:
        path: an explicit file (``--catalog``), or ``None`` for :func:`default_path`.

    Returns:
        An absolute path, or ``None`` (the catalog is turned off).

    Raises:
        ValueError: the path is inside Pi's agent folder (``$PI_CODING_AGENT_DIR`` or
            ``~/.pi/agent``) or its sessions root: a cache must never write there.
    """
    chosen = os.path.abspath(os.fspath(path)) if path is not None else default_path()
    if chosen is None:
        return None
    pi = inside_pi_folder(chosen)
    if pi is not None:
        raise ValueError(f"{chosen}: the catalog must not live inside Pi's folder {pi}")
    return chosen

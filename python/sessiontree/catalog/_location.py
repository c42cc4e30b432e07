"""Where the catalog lives: ``$SESSIONTREE_CATALOG``, else ``catalog.sqlite3`` in
sessiontree's cache folder (``_caches.cache_folder``: ``$XDG_CACHE_HOME/sessiontree/``,
else ``~/.cache/sessiontree/``, the persisted indexes' home too); never inside Pi's
folders."""

from __future__ import annotations

import os

from .._caches import OFF, cache_folder, inside_pi_folder, pi_folders

__all__ = ["ENV", "OFF", "cache_path", "default_path", "pi_folders", "resolve"]

ENV = "SESSIONTREE_CATALOG"
"""The environment variable that moves the catalog (a file path), or turns it off."""


FILE_NAME = "catalog.sqlite3"


def default_path() -> str | None:
    """The catalog file the environment asks for, ``None`` when it is turned off.

    Returns:
        ``$SESSIONTREE_CATALOG`` (``~`` expanded), else ``$XDG_CACHE_HOME/sessiontree/``
        (an absolute ``XDG_CACHE_HOME`` only, as the XDG spec says), else
        ``~/.cache/sessiontree/``, with :data:`FILE_NAME`; ``None`` when the variable
        is one of :data:`OFF` (other than unset).
    """
    env = os.environ.get(ENV)
    if env is not None:
        if env.strip().lower() in OFF:
            return None
        return os.path.abspath(os.path.expanduser(env))
    return cache_path()


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
        The file's real path (symlinks resolved: one catalog has one segment folder,
        lock and build lock, whatever name it is reached by), or ``None`` (the catalog
        is turned off).

    Raises:
        ValueError: the path is inside Pi's agent folder (``$PI_CODING_AGENT_DIR`` or
            ``~/.pi/agent``) or its sessions root: a cache must never write there.
    """
    chosen = os.fspath(path) if path is not None else default_path()
    if chosen is None:
        return None
    chosen = os.path.realpath(chosen)
    pi = inside_pi_folder(chosen)
    if pi is not None:
        raise ValueError(f"{chosen}: the catalog must not live inside Pi's folder {pi}")
    return chosen

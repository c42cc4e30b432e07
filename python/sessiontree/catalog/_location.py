"""Where the catalog lives: ``$SESSIONTREE_CATALOG``, else
``$XDG_CACHE_HOME/sessiontree/catalog.sqlite3``, else
``~/.cache/sessiontree/catalog.sqlite3``; never inside Pi's folders."""

from __future__ import annotations

import os

from .._places import default_session_root

__all__ = ["ENV", "OFF", "cache_path", "default_path", "pi_folders", "resolve"]

ENV = "SESSIONTREE_CATALOG"
"""The environment variable that moves the catalog (a file path), or turns it off."""

OFF = frozenset({"", "0", "off", "none", "no", "false"})
"""Values of :data:`ENV` that turn the catalog off (every command then reads the files)."""

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
    cache = os.environ.get("XDG_CACHE_HOME", "")
    if not os.path.isabs(cache):
        cache = os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(cache, "sessiontree", FILE_NAME)


def _inside(path: str, folder: str) -> bool:
    try:
        return os.path.commonpath([path, folder]) == folder
    except ValueError:  # different drives
        return False


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
    real = os.path.realpath(chosen)
    for pi in pi_folders():
        if _inside(real, os.path.realpath(pi)) or _inside(chosen, pi):
            raise ValueError(f"{chosen}: the catalog must not live inside Pi's folder {pi}")
    return chosen


def pi_folders() -> tuple[str, str]:
    """Pi's sessions root and agent folder as Pi computes them (config.ts
    ``getAgentDir``, ``join(agentDir, "sessions")``): absolute, symlinks not resolved.

    Each is compared with a catalog path both as it is and resolved on its own: a
    sessions root that is a symlink (``~/.pi/agent/sessions`` -> ``~/pi-sessions``, a
    dotfiles set-up) is resolved to its target, but its target's parent is not Pi's
    folder; the agent folder is the root's parent *before* resolving.
    """
    root = os.path.abspath(default_session_root())
    return root, os.path.dirname(root)

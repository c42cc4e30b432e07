"""Where Pi keeps sessions (session-manager.ts ``getDefaultSessionDir``, ``newSession``;
config.ts ``getAgentDir``).

Root ``$PI_CODING_AGENT_DIR/sessions``, else ``~/.pi/agent/sessions``; one folder per
cwd named ``--X--``; files ``<ISO time with : and . as ->_<id>.jsonl``. Nothing here
creates a folder.
"""

from __future__ import annotations

import os
import re

__all__ = ["default_session_root", "project_cwd", "project_folders", "session_dir_for_cwd", "session_file_name"]


def default_session_root() -> str:
    """Pi's sessions root: ``$PI_CODING_AGENT_DIR/sessions``, else ``~/.pi/agent/sessions``.

    A leading ``~`` in the variable is expanded, as Pi's ``getAgentDir`` does.

    Returns:
        The path (not created).
    """
    env = os.environ.get("PI_CODING_AGENT_DIR")
    if env:
        agent_dir = os.path.expanduser(env) if env == "~" or env.startswith("~/") else env
    else:
        agent_dir = os.path.join(os.path.expanduser("~"), ".pi", "agent")
    return os.path.join(agent_dir, "sessions")


def session_dir_for_cwd(cwd: str, root: str | None = None) -> str:
    """The folder Pi uses for sessions started in ``cwd`` (``getDefaultSessionDir``).

    The name is ``--X--`` where X is ``cwd`` without one leading ``/`` or ``\\`` and with
    every other ``/``, ``\\`` and ``:`` turned into ``-``
    (``/home/u/p`` -> ``--home-u-p--``, ``C:\\x`` -> ``--C--x--``).

    Args:
        cwd: the working directory, as given (not resolved).
        root: the sessions root; :func:`default_session_root` if ``None``.

    Returns:
        ``root/--X--`` (not created; Pi creates it, sessiontree does so only on write).
    """
    stripped = cwd[1:] if cwd[:1] in ("/", "\\") else cwd
    safe = "--" + stripped.replace("/", "-").replace("\\", "-").replace(":", "-") + "--"
    return os.path.join(root if root is not None else default_session_root(), safe)


def session_file_name(timestamp_iso: str, session_id: str) -> str:
    """Pi's file name for a session: ``<timestamp with : and . as ->_<id>.jsonl``.

    Args:
        timestamp_iso: the header's timestamp, e.g. ``2025-11-07T09:14:10.205Z``.
        session_id: the header's id.

    Returns:
        e.g. ``2025-11-07T09-14-10-205Z_<id>.jsonl``.
    """
    return f"{timestamp_iso.replace(':', '-').replace('.', '-')}_{session_id}.jsonl"


_DRIVE = re.compile(r"^[A-Za-z]:[\\/]")


def project_cwd(cwd: str) -> str:
    """The working directory as Pi would have recorded it, for finding its folder.

    Pi records ``process.cwd()``: absolute, normalised, symlinks resolved. So ``~`` is
    expanded and the path made absolute and resolved (a trailing ``/``, ``.`` and
    ``..`` then name the same folder). A Windows path (``C:\\x``) is left as given.
    """
    if _DRIVE.match(cwd) or "\\" in cwd:
        return cwd
    return os.path.realpath(os.path.expanduser(cwd))


def project_folders(root: str) -> list[str]:
    """The project folders of a sessions root: its direct subfolders (symlinks
    followed), sorted (files directly in the root are not listed, as in Pi)."""
    try:
        return sorted(e.path for e in os.scandir(root) if e.is_dir(follow_symlinks=True))
    except OSError:
        return []

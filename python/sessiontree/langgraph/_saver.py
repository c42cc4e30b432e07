"""``PiCheckpointSaver``: a LangGraph checkpointer whose threads are Pi session files
(docs/LANGGRAPH.md)."""

from __future__ import annotations

import asyncio
import os
import random
import re
import stat
import tempfile
import threading
from collections import OrderedDict
from collections.abc import AsyncIterator, Iterator, Sequence
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    BaseCheckpointSaver,
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
    CheckpointTuple,
    SerializerProtocol,
    get_checkpoint_id,
    get_checkpoint_metadata,
)

from .._keyed import key_file_name, keys_of_file_name
from .._manager import SessionManager
from .._storage import process_alive
from ..errors import SessionFileExistsError
from ._thread import ThreadFile

__all__ = ["PiCheckpointSaver"]

# copy_thread forks a thread into a folder of its own beside the threads, named for its
# process so that one left by a killed process (SIGKILL, or SIGTERM, which ends the
# process without unwinding) can be told from one in use and removed by the next copy.
_ASIDE_PREFIX = ".copy-{pid}-"
_ASIDE = re.compile(r"\.copy-(?P<pid>[0-9]+)-[A-Za-z0-9_]+")


def _sweep_asides(root: str) -> None:
    """Remove the copy folders (and the files in them) that a dead process left in
    ``root``; a file someone holds locked, anything else and every error are left."""
    import fcntl

    try:
        names = os.listdir(root)
    except OSError:
        return
    for name in names:
        m = _ASIDE.fullmatch(name)
        if m is None or int(m["pid"]) == os.getpid() or process_alive(int(m["pid"])):
            continue
        folder = os.path.join(root, name)
        try:
            if not stat.S_ISDIR(os.lstat(folder).st_mode):
                continue
            for inner in os.listdir(folder):
                p = os.path.join(folder, inner)
                fd = os.open(p, os.O_RDONLY | os.O_NOFOLLOW)
                try:
                    if stat.S_ISREG(os.fstat(fd).st_mode):
                        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                        os.unlink(p)
                finally:
                    os.close(fd)
            os.rmdir(folder)
        except OSError:
            continue


class PiCheckpointSaver(BaseCheckpointSaver[str]):
    """A LangGraph checkpointer storing each thread as Pi session files in one folder:
    ``<thread_id>.jsonl`` for the root namespace and ``<thread_id>@<checkpoint_ns>.jsonl``
    for a subgraph's (both made file-safe: every byte outside ``[A-Za-z0-9_-]`` as
    ``%XX``). The tree of a file is the checkpoint tree, and the graph's messages
    channel is written as Pi messages beside it, so ``sessiontree tree``, ``context``,
    ``browse``, ``export``, ``search`` and ``usage`` (and Pi) read a thread as the
    conversation it is (``sessiontree.langgraph._thread`` says how).

    Every ``put`` and ``put_writes`` is on disk (fsynced) when it returns. One writer
    per thread: the first write to a thread takes its file's lock
    (``SessionLockedError`` for a writer in another process) and keeps it until the file
    leaves the saver's open files (at most ``max_open`` at once, least recently used
    closed first) or :meth:`close`. Other processes read a thread while it is written.

    Channel versions are strings made unique per thread (as ``InMemorySaver`` makes
    them), so that a value is found by channel and version on any branch.

    Args:
        root: the folder of the thread files (created at the first write).
        serde: the serializer (default LangGraph's ``JsonPlusSerializer``); checkpoints,
            metadata and values are stored as its ``dumps_typed`` gives them.
        messages_channel: the channel shown as Pi messages (``None``: none).
        cwd: recorded in new files' headers (default: the process's).
        backend: ``"auto"``, ``"python"`` or ``"native"`` (see ``SessionManager``).
        max_open: how many thread files are kept open.
    """

    def __init__(
        self,
        root: str | os.PathLike[str],
        *,
        serde: SerializerProtocol | None = None,
        messages_channel: str | None = "messages",
        cwd: str | None = None,
        backend: str | None = None,
        max_open: int = 64,
    ) -> None:
        super().__init__(serde=serde)
        self.root = os.path.abspath(os.fspath(root))
        self.messages_channel = messages_channel
        self.cwd = cwd if cwd is not None else os.getcwd()
        self.backend = backend
        self.max_open = max(1, int(max_open))
        self._lock = threading.RLock()
        self._files: OrderedDict[str, ThreadFile] = OrderedDict()

    # ------------------------------------------------------------ the files
    def path_of(self, thread_id: Any, checkpoint_ns: str = "") -> str:
        """The file of a thread's namespace (it exists once something was written).

        Raises:
            ValueError: the thread id is empty or too long for a file name.
        """
        return os.path.join(self.root, key_file_name(str(thread_id), checkpoint_ns, what="thread_id"))

    def _file(self, thread_id: Any, checkpoint_ns: str) -> ThreadFile:
        path = self.path_of(thread_id, checkpoint_ns)
        tf = self._files.get(path)
        if tf is None:
            name = str(thread_id) if not checkpoint_ns else f"{thread_id} [{checkpoint_ns}]"
            tf = ThreadFile(path, name, self.serde, self.messages_channel, self.cwd, self.backend)
            self._files[path] = tf
            while len(self._files) > self.max_open:
                self._files.popitem(last=False)[1].close()
        self._files.move_to_end(path)
        return tf

    def _namespaces(self, thread_id: Any) -> list[str]:
        """The namespaces the folder holds files of for a thread, root first."""
        return sorted(ns for tid, ns in self._threads() if tid == str(thread_id))

    def _threads(self) -> list[tuple[str, str]]:
        """``(thread_id, checkpoint_ns)`` of every thread file in the folder."""
        try:
            names = sorted(os.listdir(self.root))
        except FileNotFoundError:
            return []
        out = []
        for name in names:
            keys = keys_of_file_name(name)
            if keys is not None:
                out.append(keys)
        return out

    def close(self) -> None:
        """Release every thread file (and its writer lock)."""
        with self._lock:
            for tf in self._files.values():
                tf.close()
            self._files.clear()

    def __enter__(self) -> PiCheckpointSaver:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # `async with PiCheckpointSaver(...) as saver:`, as LangGraph's async savers are used.
    async def __aenter__(self) -> PiCheckpointSaver:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await asyncio.to_thread(self.close)  # waits for the lock a running call holds

    # ----------------------------------------------------------- the tuples
    @staticmethod
    def _config(thread_id: Any, checkpoint_ns: str, checkpoint_id: Any) -> RunnableConfig:
        return {"configurable": {"thread_id": thread_id, "checkpoint_ns": checkpoint_ns,
                                 "checkpoint_id": checkpoint_id}}

    def _tuple(self, thread_id: Any, checkpoint_ns: str, got: tuple[Any, ...]) -> CheckpointTuple:
        checkpoint_id, checkpoint, metadata, parent, pending = got
        return CheckpointTuple(
            config=self._config(thread_id, checkpoint_ns, checkpoint_id),
            checkpoint=checkpoint,
            metadata=metadata,
            parent_config=self._config(thread_id, checkpoint_ns, parent) if parent else None,
            pending_writes=pending,
        )

    # -------------------------------------------------------------- the API
    def get_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        """The checkpoint ``config`` names (its ``checkpoint_id``, else the thread's
        newest by id), with its pending writes in ``writes_sort_key`` order; ``None``
        when there is none."""
        conf = config["configurable"]
        thread_id, checkpoint_ns = conf["thread_id"], conf.get("checkpoint_ns", "")
        with self._lock:
            got = self._file(thread_id, checkpoint_ns).get(get_checkpoint_id(config))
            return self._tuple(thread_id, checkpoint_ns, got) if got is not None else None

    def list(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> Iterator[CheckpointTuple]:
        """Checkpoints newest first (by id) per thread namespace: of ``config``'s thread
        (every thread when ``None``) and namespace (every one when it has none),
        only its ``checkpoint_id`` when it has one, older than ``before``'s, whose
        metadata holds every item of ``filter``; at most ``limit``."""
        if limit is not None and limit <= 0:
            return
        before_id = get_checkpoint_id(before) if before else None
        with self._lock:
            if config is None:
                places = self._threads()
                wanted_id = None
            else:
                conf = config["configurable"]
                thread_id = conf["thread_id"]
                ns = conf.get("checkpoint_ns")
                places = [(thread_id, ns)] if ns is not None else [(thread_id, n) for n in self._namespaces(thread_id)]
                wanted_id = get_checkpoint_id(config)
            out: list[CheckpointTuple] = []
            for thread_id, ns in places:
                for got in self._file(thread_id, ns).select(wanted_id, filter, before_id):
                    out.append(self._tuple(thread_id, ns, got))
                    if limit is not None and len(out) >= limit:
                        break
                if limit is not None and len(out) >= limit:
                    break
        yield from out

    def put(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        """Store a checkpoint below its parent (``config``'s ``checkpoint_id``); on disk
        when this returns.

        Raises:
            ValueError: the checkpoint id is not a non-empty str without ``/``, or is
                already in the thread.
            SessionLockedError: another process writes the thread.
            OSError: the write failed.
        """
        conf = config["configurable"]
        thread_id, checkpoint_ns = conf["thread_id"], conf.get("checkpoint_ns", "")
        with self._lock:
            self._file(thread_id, checkpoint_ns).put(
                checkpoint, get_checkpoint_metadata(config, metadata), new_versions, conf.get("checkpoint_id"))
        return self._config(thread_id, checkpoint_ns, checkpoint["id"])

    def put_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        """Store a task's writes for ``config``'s checkpoint; on disk when this returns.

        Raises:
            SessionLockedError: another process writes the thread.
            OSError: the write failed.
        """
        conf = config["configurable"]
        with self._lock:
            self._file(conf["thread_id"], conf.get("checkpoint_ns", "")).put_writes(
                conf["checkpoint_id"], list(writes), task_id, task_path)

    def delete_thread(self, thread_id: str) -> None:
        """Delete every file of the thread (each namespace's).

        Raises:
            SessionLockedError: another process writes one of them (none is deleted
                after that one).
        """
        with self._lock:
            for ns in self._namespaces(thread_id):
                tf = self._file(thread_id, ns)
                mgr = tf._open(create=False)
                if mgr is not None:
                    # The writer lock first, so that no other process is writing it.
                    mgr.append_custom_entry("langgraph.deleted", {"threadId": str(thread_id)})
                    try:
                        os.unlink(tf.path)
                    except FileNotFoundError:
                        pass
                tf.close()
                self._files.pop(tf.path, None)

    def copy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        """Copy every file of a thread to another thread (Pi's fork: every entry
        unchanged, the header's ``parentSession`` naming the source file).

        Raises:
            SessionFileExistsError: the target thread has a file already.
        """
        with self._lock:
            for ns in self._namespaces(source_thread_id):
                source = self._file(source_thread_id, ns)
                if source._open(create=False) is None:
                    continue
                target = self.path_of(target_thread_id, ns)
                if os.path.lexists(target):
                    raise SessionFileExistsError(f"{target}: the target thread exists")
                # Forked aside (Pi names the copy), then given the target's name.
                _sweep_asides(self.root)
                aside = tempfile.mkdtemp(prefix=_ASIDE_PREFIX.format(pid=os.getpid()), dir=self.root)
                try:
                    copy = SessionManager.fork_from(source.path, self.cwd, aside, backend=self.backend)
                    try:
                        forked = copy.session_file
                        assert forked is not None
                        os.link(forked, target)  # never replaces a file
                        os.unlink(forked)
                        copy.set_session_file(target)
                        copy.append_session_info(str(target_thread_id) if not ns else f"{target_thread_id} [{ns}]")
                    finally:
                        copy.close()
                finally:
                    for name in os.listdir(aside):
                        os.unlink(os.path.join(aside, name))
                    os.rmdir(aside)
                self._files.pop(target, None)

    def get_next_version(self, current: str | None, channel: None) -> str:
        """``<n+1, 32 digits>.<random>``, as ``InMemorySaver`` makes versions: unique per
        thread, so branches never share a version with different values."""
        if current is None:
            n = 0
        elif isinstance(current, int):
            n = current
        else:
            n = int(str(current).split(".")[0])
        return f"{n + 1:032}.{random.random():016}"

    # ------------------------------------------------------ async variants
    async def aget_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        return await asyncio.to_thread(self.get_tuple, config)

    async def alist(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> AsyncIterator[CheckpointTuple]:
        for item in await asyncio.to_thread(lambda: list(self.list(config, filter=filter, before=before, limit=limit))):
            yield item

    async def aput(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        return await asyncio.to_thread(self.put, config, checkpoint, metadata, new_versions)

    async def aput_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        await asyncio.to_thread(self.put_writes, config, writes, task_id, task_path)

    async def adelete_thread(self, thread_id: str) -> None:
        await asyncio.to_thread(self.delete_thread, thread_id)

    async def acopy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        await asyncio.to_thread(self.copy_thread, source_thread_id, target_thread_id)


"""``SessionStorage`` is ``@runtime_checkable``: both storages (and the one under a
``SessionManager``) pass ``isinstance``, on both backends; an object without its methods
does not. Before, ``isinstance(x, SessionStorage)`` raised TypeError."""

from __future__ import annotations

from pathlib import Path

from sessiontree import InMemorySessionStorage, JsonlSessionStorage, SessionManager, SessionStorage


def test_both_storages_are_session_storages(tmp_path: Path, backend: str) -> None:
    memory = InMemorySessionStorage.create("/w", backend=backend)
    jsonl = JsonlSessionStorage.create(tmp_path / "s.jsonl", cwd="/w", first_write="now", backend=backend)
    try:
        assert isinstance(memory, SessionStorage) and isinstance(jsonl, SessionStorage)
        with SessionManager.in_memory("/w", backend=backend) as sm:
            assert isinstance(sm.storage, SessionStorage)
        reopened = JsonlSessionStorage.open(tmp_path / "s.jsonl", backend=backend)
        assert isinstance(reopened, SessionStorage)
        reopened.close()
    finally:
        jsonl.close()


class _OnlyTheLeaf:
    def get_leaf_id(self) -> str | None:
        return None


def test_what_lacks_its_methods_is_not() -> None:
    assert not isinstance(_OnlyTheLeaf(), SessionStorage)
    assert not isinstance({}, SessionStorage)

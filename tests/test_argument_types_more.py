"""The pure functions and ``SessionManager.list`` refuse a wrong argument type with a
``TypeError`` naming the argument (CONTRACT §4), not an ``AttributeError`` from inside.
"""
import pytest
from sessiontree import SessionManager, build_session_context


@pytest.mark.parametrize("bad", ["x", [5], None, 5])
def test_build_session_context_names_entries(bad):
    with pytest.raises(TypeError, match="entries"):
        build_session_context(bad)


def test_list_checks_cwd(tmp_path):
    with pytest.raises(TypeError, match="cwd"):
        SessionManager.list(5, session_dir=str(tmp_path))

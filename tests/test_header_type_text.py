"""A first line whose ``type`` is not a string is named in ``InvalidSessionError`` the
same way by both backends, whatever JSON value it is (the native core hands over the
value's text: a number's sign, point and exponent belong to it)."""

import pytest

from sessiontree import InvalidSessionError, SessionManager


@pytest.mark.parametrize("value", ["-1.5e+3", "-7", "0.25", "true", "null", '[1,{"a":"]"}]', '{"k":-1}'])
def test_both_backends_name_the_type(tmp_path, value):
    p = tmp_path / "s.jsonl"
    p.write_text('{"type":%s,"id":"h","cwd":"/p"}\n' % value)
    said = []
    for backend in ("python", "native"):
        with pytest.raises(InvalidSessionError) as e:
            SessionManager.open(str(p), backend=backend)
        said.append(str(e.value))
    assert said[0] == said[1], said
    assert "undefined" not in said[0]

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


@pytest.mark.parametrize(("line", "words"), [
    ('{"x":1}', "(no type)"),
    ('{"type":null,"id":"h"}', '(type is null, not "session")'),
    ('{"type":true}', '(type is true, not "session")'),
    ('{"type":"message","id":"h"}', '(type is "message", not "session")'),
    ('{"type":-1.5e+3}', '(type is -1500.0, not "session")'),
])
def test_the_words_spell_the_value_as_json(tmp_path, line, words):
    """The reason names the value as the file spells it in JSON, never Python's ``None``
    or ``True`` (a first-time user met "type is None" for a line with no type)."""
    p = tmp_path / "s.jsonl"
    p.write_text(line + "\n")
    for backend in ("python", "native"):
        with pytest.raises(InvalidSessionError) as e:
            SessionManager.open(str(p), backend=backend)
        assert e.value.reason.endswith(words), e.value.reason
        assert "None" not in str(e.value) and "True" not in str(e.value)

"""_jsonl: framing, json.loads-exact decoding, JSON.stringify-exact encoding."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sessiontree._jsonl import (
    BOM,
    MAX_DEPTH,
    decode_line,
    decode_line_ex,
    encode_entry,
    has_invalid_utf8,
    is_blank,
    iter_lines,
    js_string,
)
from sessiontree._js import number_text as js_number


def _pi_written(corpus_dir: Path) -> list[Path]:
    index = json.loads((corpus_dir / "index.json").read_text())
    return [
        corpus_dir / f"{sc['name']}.jsonl"
        for sc in index["scenarios"]
        if sc["kind"] in ("hand", "branched", "random")
    ]


# ---------------------------------------------------------------------- framing


def test_iter_lines_crlf_tail_blank() -> None:
    data = b"a\r\nbb\n\n\r\nc\rd\ntail\r"
    assert list(iter_lines(data)) == [
        (1, 0, b"a", False),
        (2, 3, b"bb", False),
        (3, 6, b"", False),
        (4, 7, b"", False),
        (5, 9, b"c\rd", False),  # a CR not before LF is data
        (6, 13, b"tail\r", True),  # the tail keeps its CR: no line ending yet
    ]


def test_iter_lines_final_lf_has_no_tail() -> None:
    assert list(iter_lines(b"x\ny\n")) == [(1, 0, b"x", False), (2, 2, b"y", False)]
    assert list(iter_lines(b"")) == []
    assert list(iter_lines(b"\n")) == [(1, 0, b"", False)]


def test_iter_lines_start_and_first_line() -> None:
    data = b"aa\nbb\ncc"
    assert list(iter_lines(data, 3, 2)) == [(2, 3, b"bb", False), (3, 6, b"cc", True)]


def test_iter_lines_only_lf_splits() -> None:
    # U+2028, U+0085, VT, FF, FS..RS occur raw inside Pi's lines.
    line = '{"t":"a\u2028b\u0085c\x0bd\x0ce\x1cf"}'.encode()
    assert [c for _, _, c, _ in iter_lines(line + b"\n" + line)] == [line, line]


def test_is_blank() -> None:
    assert is_blank(b"") and is_blank(b" \t\r ")
    assert not is_blank(b" x") and not is_blank(b"\xc2\xa0")


# --------------------------------------------------------------------- decoding

TRICKY = [
    b'{"big":123456789012345678901234567890,"neg":-9223372036854775809}',
    b'{"u64max":18446744073709551615,"over":18446744073709551616}',
    b'{"s":"abc\\ud83d","r":"\\udc00\\ud800","pair":"\\ud83d\\ude00"}',
    b'{"inf":1e400,"ninf":-1e400,"tiny":1e-400}',
    b'{"z":-0,"zf":-0.0,"f":5.0,"e":1E2}',
    '{"ls":"a\u2028b\u2029c"}'.encode(),
    b'{"a":1,"b":2,"a":3}',
    b'  {"ws":true}  ',
    b'"just a string"',
    b"[1,2,3]",
    b'{"digits in string":"1234567890123456789012345"}',
    b'{"f":0.30000000000000004,"m":1.7976931348623157e308,"d":5e-324}',
    b'{"cost":0.0009390000000000001,"big":[18446744073709551616]}',
    b"123456789012345678901234567890",
    b"[-123456789012345678901234567890]",
    b'{"x":12345678901234567890.5,"e":1e0000000000000000001}',
]


@pytest.mark.parametrize("raw", TRICKY)
def test_decode_equals_json_loads(raw: bytes) -> None:
    got = decode_line(raw)
    want = json.loads(raw.decode())
    assert got == want or (json.dumps(got) == json.dumps(want))
    assert repr(got) == repr(want)  # types too: int stays int, -0.0 stays float


def test_fraction_digits_take_the_fast_path(monkeypatch: pytest.MonkeyPatch) -> None:
    """Costs like 0.0009390000000000001 are on almost every assistant line: orjson reads
    floats exactly, so only integer digit runs may force the slow json.loads path."""
    import sessiontree._jsonl as j

    def boom(raw: bytes) -> object:
        raise AssertionError("slow path taken")

    monkeypatch.setattr(j, "_slow_decode", boom)
    assert j.decode_line(b'{"cost":{"input":0.0009390000000000001,"total":0.0036000000000000003}}')


@pytest.mark.parametrize(
    "raw",
    [b"NaN", b'{"a":NaN}', b'{"a":Infinity}', b'{"a":-Infinity}', b'{"a":1,}', b"{'a':1}", b'{"a":1', b"",
     BOM + b'{"a":1}', b'{"a":"\x01"}', b'{"a":1}x', b'{"big":12345678901234567890, "n":NaN}'],
)
def test_decode_rejects(raw: bytes) -> None:
    with pytest.raises(ValueError):
        decode_line(raw)


def test_decode_invalid_utf8_replaced_and_flagged() -> None:
    raw = b'{"a":"x\xffy\xc0\xafz\xed\xa0\x80"}'
    obj, replaced = decode_line_ex(raw)
    assert replaced is True
    assert obj == json.loads(raw.decode("utf-8", "replace"))
    assert has_invalid_utf8(raw) and not has_invalid_utf8(b'{"a":"\xc3\xa9"}')
    assert decode_line_ex(b'{"a":"\xc3\xa9"}') == ({"a": "é"}, False)


def test_decode_depth_limit_is_deterministic() -> None:
    ok = b"[" * MAX_DEPTH + b"]" * MAX_DEPTH
    too_deep = b"[" * (MAX_DEPTH + 1) + b"]" * (MAX_DEPTH + 1)
    assert isinstance(decode_line(ok), list)
    with pytest.raises(ValueError):
        decode_line(too_deep)
    # The json.loads fallback (forced by a 20-digit int) has the same limit.
    big = b"1" * 20
    assert isinstance(decode_line(b"[" * MAX_DEPTH + big + b"]" * MAX_DEPTH), list)
    with pytest.raises(ValueError):
        decode_line(b"[" * (MAX_DEPTH + 1) + big + b"]" * (MAX_DEPTH + 1))


def test_decode_accepts_str() -> None:
    assert decode_line('{"a":"\\ud800"}') == {"a": "\ud800"}


# --------------------------------------------------------------------- encoding


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (1e-7, "1e-7"), (5e-5, "0.00005"), (1e-6, "0.000001"), (1.234e-7, "1.234e-7"),
        (1e21, "1e+21"), (1e20, "100000000000000000000"), (1e16, "10000000000000000"),
        (5.0, "5"), (-0.0, "0"), (0.0, "0"), (0.1 + 0.2, "0.30000000000000004"),
        (5e-324, "5e-324"), (1.7976931348623157e308, "1.7976931348623157e+308"),
        (-2.5e25, "-2.5e+25"), (123456789012.5, "123456789012.5"), (9007199254740994.0, "9007199254740994"),
        (math.nan, "null"), (math.inf, "null"), (-math.inf, "null"),
        (2**70, "1180591620717411303424"), (-5, "-5"), (True, "true"), (None, "null"),
    ],
)
def test_encode_numbers_like_js(value: object, text: str) -> None:
    assert encode_entry(value).decode() == text
    assert encode_entry([value]).decode() == f"[{text}]"
    # the slow path (a lone surrogate forces it) spells numbers the same way
    assert encode_entry({"s": "\ud800", "v": value}).decode() == f'{{"s":"\\ud800","v":{text}}}'


def test_encode_strings_like_js() -> None:
    s = "\x00\x01\x08\t\n\x0b\x0c\r\x1f\x7f\"\\/é\u2028\u2029\ufeff\u0085😀"
    want = '"\\u0000\\u0001\\b\\t\\n\\u000b\\f\\r\\u001f\x7f\\"\\\\/é\u2028\u2029\ufeff\u0085😀"'
    assert encode_entry(s) == want.encode()
    assert js_string(s) == want


def test_encode_surrogates() -> None:
    assert encode_entry("abc\ud83d") == b'"abc\\ud83d"'
    assert encode_entry("\udc00\ud800") == b'"\\udc00\\ud800"'
    # two Python chars forming a pair are one character to JavaScript: written raw
    assert encode_entry("\ud83d\ude00") == "\"😀\"".encode()
    assert encode_entry({"k\ud800": 1}) == b'{"k\\ud800":1}'


def test_encode_every_bmp_char_matches_reference() -> None:
    codes = [c for c in range(0x10000) if not 0xD800 <= c <= 0xDFFF]
    chars = "".join(chr(c) for c in codes)
    want = "".join(_ref_char(chr(c)) for c in codes)
    assert encode_entry(chars) == ('"' + want + '"').encode("utf-8")
    # Each surrogate alone (adjacent high+low would pair up, see test_encode_surrogates).
    for c in range(0xD800, 0xE000):
        assert encode_entry("x" + chr(c) + "x") == ('"x' + _ref_char(chr(c)) + 'x"').encode()


def _ref_char(ch: str) -> str:
    # JSON.stringify's QuoteJSONString, written out independently.
    table = {'"': '\\"', "\\": "\\\\", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t"}
    if ch in table:
        return table[ch]
    if ord(ch) < 0x20 or 0xD800 <= ord(ch) <= 0xDFFF:
        return "\\u%04x" % ord(ch)
    return ch


def test_encode_structure_and_order() -> None:
    obj = {"type": "x", "b": [1, {"z": None, "a": False}], "a": {}, "e": [], "t": (1, 2)}
    assert encode_entry(obj) == b'{"type":"x","b":[1,{"z":null,"a":false}],"a":{},"e":[],"t":[1,2]}'


def test_encode_non_str_keys_like_js() -> None:
    assert encode_entry({1: "a", 1.5: "b", True: "c", None: "d"}) == b'{"1":"c","1.5":"b","null":"d"}'


def test_encode_deep_nesting_no_recursion_limit() -> None:
    depth = 10_000
    obj: list = []
    cur = obj
    for _ in range(depth):
        nxt: list = []
        cur.append(nxt)
        cur = nxt
    assert encode_entry(obj) == b"[" * (depth + 1) + b"]" * (depth + 1)


def test_encode_rejects_cycles_and_unknown_types() -> None:
    a: list = []
    a.append(a)
    with pytest.raises(ValueError):
        encode_entry(a)
    with pytest.raises(TypeError):
        encode_entry({"x": object()})


def test_js_number_direct() -> None:
    assert js_number(100) == "100"
    assert js_number(1.5e300) == "1.5e+300"
    assert js_number(123e-9) == "1.23e-7"


def test_roundtrip_every_corpus_line_written_by_pi(corpus_dir: Path) -> None:
    """encode_entry(json.loads(line)) == line for every line Pi wrote."""
    count = 0
    for path in _pi_written(corpus_dir):
        for line_no, _, raw, tail in iter_lines(path.read_bytes()):
            assert not tail
            value = json.loads(raw)
            assert decode_line(raw) == value
            assert encode_entry(value) == raw, f"{path.name}:{line_no}"
            count += 1
    assert count > 2000


def test_roundtrip_ops_json_values(corpus_dir: Path) -> None:
    """Every ops.json was printed by JSON.stringify too (pretty or compact: compare values)."""
    for path in sorted(corpus_dir.glob("*.ops.json")):
        data = json.loads(path.read_text())
        for op in data["ops"]:
            text = encode_entry(op.get("args", {}))
            assert json.loads(text) == op.get("args", {})


def test_corpus_number_and_unicode_lines_exact(corpus_dir: Path) -> None:
    for name in ("hand-numbers", "hand-unicode"):
        for _, _, raw, _ in iter_lines((corpus_dir / f"{name}.jsonl").read_bytes()):
            assert encode_entry(decode_line(raw)) == raw


# ------------------------------------------------------------------- hypothesis

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(),
    lambda children: st.lists(children, max_size=5) | st.dictionaries(st.text(), children, max_size=5),
    max_leaves=30,
)


def _canon(v: object) -> object:
    # JSON.stringify has no -0 and no integral-float spelling, so 5.0 reads back as 5 and
    # 2.05e16 as an int: compare numbers by value, as doubles beyond 2**53.
    if isinstance(v, bool):
        return v
    if isinstance(v, int) and abs(v) > 2**53 and abs(v) < 1e308:
        return float(v)
    if isinstance(v, float):
        if v == 0:
            return 0
        return int(v) if v.is_integer() and abs(v) <= 2**53 else v
    if isinstance(v, list):
        return [_canon(x) for x in v]
    if isinstance(v, dict):
        return {k: _canon(x) for k, x in v.items()}
    return v


@settings(max_examples=300, deadline=None)
@given(json_values)
def test_hypothesis_encode_decode_roundtrip(value: object) -> None:
    text = encode_entry(value)
    assert _canon(decode_line(text)) == _canon(value)
    assert _canon(json.loads(text.decode("utf-8"))) == _canon(value)
    # stable: decoding and re-encoding gives the same bytes
    assert encode_entry(decode_line(text)) == text


@settings(max_examples=300, deadline=None)
@given(st.floats(allow_nan=False, allow_infinity=False))
def test_hypothesis_float_spelling_roundtrips(x: float) -> None:
    s = js_number(x)
    assert float(s) == x or (x == 0 and s == "0")
    # JS spells integral values below 1e21 without exponent or fraction
    if x.is_integer() and abs(x) < 1e21:
        assert "." not in s and "e" not in s


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=40))
def test_hypothesis_decode_matches_json_loads_on_bytes(raw: bytes) -> None:
    text = raw.decode("utf-8", "replace")

    def reject(name: str) -> object:
        raise ValueError(name)

    try:
        want = json.loads(text, parse_constant=reject)
    except (ValueError, RecursionError):
        with pytest.raises(ValueError):
            decode_line(raw)
        return
    got = decode_line(raw)
    assert repr(got) == repr(want)


@settings(max_examples=500, deadline=None)
@given(st.lists(st.floats(allow_nan=False) | st.text(alphabet="0123456789.e+-,]}\"\\ "), max_size=6))
def test_hypothesis_fast_path_equals_slow_path(values: list) -> None:
    """orjson + float respelling gives the same bytes as the pure-Python encoder."""
    from sessiontree._jsonl import _encode_slow

    assert encode_entry(values) == _encode_slow(values).encode("utf-8")
    assert encode_entry({"v": values}) == _encode_slow({"v": values}).encode("utf-8")

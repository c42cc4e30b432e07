"""A model's label has one spelling (``view.model_label``): ``provider/model``, a side a
session does not give ``(unknown)``, neither given ``(unknown)``, in ``context``,
``info``, ``tree``, the exports and ``usage``'s lines by model (the rule:
``_models.model_name``, which the catalog uses; ``src/usage.rs`` spells it natively),
on both backends (trial 55: ``context`` printed ``model /`` where ``usage`` said
``(unknown)``)."""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path
from typing import Any

import pytest

from sessiontree.catalog._usage import _model_name
from sessiontree.view import UNKNOWN, model_label

# (provider, model) as a message may hold them (None: the key is absent) -> the label
PAIRS: list[tuple[Any, Any, str]] = [
    ("anthropic", "claude-x", "anthropic/claude-x"),
    ("", "", "(unknown)"),
    (None, None, "(unknown)"),
    ("anthropic", None, "anthropic/(unknown)"),
    ("anthropic", "", "anthropic/(unknown)"),
    (None, "m1", "(unknown)/m1"),
    ("", "m1", "(unknown)/m1"),
    (5, ["x"], "(unknown)"),  # not strings: the catalog records them as ""
    ("a/b", "c", "a/b/c"),
]


def test_model_label() -> None:
    assert UNKNOWN == "(unknown)"
    for provider, model, label in PAIRS:
        assert model_label(provider, model) == label
    assert model_label(None, "") == model_label("", None, unknown="(unknown)") == "(unknown)"
    assert model_label(None, None, unknown="") == "" and model_label("p", None, unknown="") == "p/(unknown)"


def test_the_catalog_names_a_pair_as_the_view_does() -> None:
    for provider, model, _label in PAIRS:
        p, m = (x if isinstance(x, str) else "" for x in (provider, model))  # as the log holds them
        assert _model_name(p, m) == model_label(provider, model)


def _cli(args: list[str]) -> str:
    from sessiontree.cli import main

    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        assert main(args) == 0
    return out.getvalue()


def _session(path: Path, fields: dict[str, Any]) -> Path:
    lines = [
        {"type": "session", "version": 3, "id": "s1", "timestamp": "2025-11-07T09:00:00.000Z", "cwd": "/w"},
        {"type": "message", "id": "a1", "parentId": None, "timestamp": "2025-11-07T09:00:01.000Z",
         "message": {"role": "user", "content": "hi", "timestamp": 1_762_506_001_000}},
        {"type": "message", "id": "a2", "parentId": "a1", "timestamp": "2025-11-07T09:00:02.000Z",
         "message": {"role": "assistant", **fields, "content": [{"type": "text", "text": "hello"}],
                     "usage": {"input": 10, "output": 5, "cost": {"total": 0.01}}, "stopReason": "stop",
                     "timestamp": 1_762_506_002_000}},
        {"type": "model_change", "id": "a3", "parentId": "a2", "timestamp": "2025-11-07T09:00:03.000Z",
         **({"provider": fields["provider"]} if "provider" in fields else {"modelId": fields.get("model")})},
        {"type": "usage", "id": "a4", "parentId": "a3", "timestamp": "2025-11-07T09:00:04.000Z", "kind": "compaction",
         **fields, "usage": {"input": 1}},
    ]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")
    return path


@pytest.mark.parametrize(("fields", "label"), [
    ({"provider": "", "model": ""}, "(unknown)"),
    ({"provider": None, "model": None}, "(unknown)"),
    ({"provider": "anthropic"}, "anthropic/(unknown)"),
    ({"model": "m1"}, "(unknown)/m1"),
])
def test_every_viewer_spells_the_label_alike(tmp_path: Path, backend: str, fields: dict[str, Any],
                                             label: str) -> None:
    path = _session(tmp_path / "p" / "s.jsonl", fields)
    b = ["--backend", backend]
    context = _cli(["context", str(path), "--leaf", "a2", *b])
    assert f"model {label}," in context, context
    shown = label if label != UNKNOWN else ""  # a message's header leaves an unknown model out
    head = next(x for x in context.splitlines() if x.startswith("[2] assistant"))
    assert head.startswith(f"[2] assistant  {shown}  stop" if shown else "[2] assistant  stop"), head
    assert f"models           {label} 1" in _cli(["info", str(path), *b])
    _cli(["export", str(path), "--format", "markdown", "--out", str(tmp_path / "s.md"), *b])
    md = (tmp_path / "s.md").read_text(encoding="utf-8")
    assert ("· 2025-11-07 09:00:02 UTC · " + (f"{shown} · " if shown else "") + "in 10 · out 5") in md, md
    assert f"model → {label}" in md and f"compaction · {label} · in 1" in md, md
    tree = _cli(["tree", str(path), *b])
    assert f"compaction · {label} · in 1" in tree and f"a3       model          {label}\n" in tree, tree
    for catalog in ("--no-cache", f"--catalog={tmp_path / 'catalog.sqlite3'}"):  # cold, then warm twice (native lines)
        for _ in range(2 if catalog != "--no-cache" else 1):
            report = json.loads(_cli(["usage", "model", str(tmp_path / "p"), catalog, "--json", *b]))
            assert [x["key"] for x in report["lines"]] == [label], report

"""The package's layers, held by its imports (docs/ARCHITECTURE.md, "Layers").

Every import of every module is read with ``ast`` (function-level imports and
``TYPE_CHECKING`` ones included) and the modules are put in three layers, lowest first:

* **core**: the session library (``sessiontree``'s own modules: the facade, ``errors``,
  ``schema``, every ``_module`` of the package root, the catalog, the v4 reader);
* **view**: how sessions are shown (``sessiontree.view``);
* **applications**: what is built on them (:data:`APPLICATIONS`).

The rules: a module imports nothing of a layer above its own; an application takes of
the core only :data:`CORE_API` (never the loader, the backends, the file state or the
writer's internals); a sub-package's ``_private`` modules are imported only from inside
it (the others use its ``__init__``); and there is no import cycle, in Python or among
the Rust crate's modules (``src/``). :data:`ALLOWED` lists the exceptions, each with its
reason (none today).

``python tests/test_layers.py`` prints the dependency table ARCHITECTURE.md shows;
``--write`` puts it there (``test_architecture_shows_this_table`` fails until it does).
"""

from __future__ import annotations

import ast
import functools
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PKG = ROOT / "python" / "sessiontree"
SRC = ROOT / "src"
DOC = ROOT / "docs" / "ARCHITECTURE.md"
BEGIN, END = "<!-- layers: begin (python tests/test_layers.py --write) -->", "<!-- layers: end -->"

CORE, VIEW, APP = "core", "view", "application"
RANK = {CORE: 0, VIEW: 1, APP: 2}

APPLICATIONS = {
    "cli": "the `sessiontree` command",
    "browse": "the terminal browser (Textual)",
    "export": "the HTML and Markdown exports",
    "importers": "Claude Code and Codex sessions as Pi trees",
    "tables": "the Parquet export of a history (pyarrow)",
    "generate": "synthetic sessions",
    "demo": "`make demo`",
    "agents": "the OpenAI Agents SDK session",
    "langgraph": "the LangGraph checkpointer",
    "__main__": "`python -m sessiontree`",
}
CORE_PUBLIC = {"errors", "schema", "v4", "catalog"}
"""The core's modules and packages with public names (its ``_private`` ones are core too)."""

CORE_API = {
    "sessiontree": "the public API (SessionManager, the storages, list, contexts, errors)",
    "sessiontree.errors": "exceptions",
    "sessiontree.schema": "the entry types and their TypedDicts",
    "sessiontree.catalog": "search, usage, index over many sessions",
    "sessiontree.v4": "agent-core's version 4 files (read)",
    "sessiontree._manager": "SessionManager (what the facade exports)",
    "sessiontree._backend": "the backend protocol's types, the cache budget",
    "sessiontree._select": "the backends' names",
    "sessiontree._listing": "listing rows and problems, project_cwd",
    "sessiontree._places": "where Pi keeps sessions",
    "sessiontree._time": "Date.parse, local times",
    "sessiontree._models": "how a model is named (the viewers' labels, usage's lines by model)",
    "sessiontree._tuples": "NamedTuple's class syntax without importing typing (a command's start)",
    "sessiontree._output": "where a command's output goes",
    "sessiontree._storage": "regular-file checks, locked temporary files",
    "sessiontree._keyed": "one session file per key (framework stores)",
    "sessiontree._jsonl": "JSON lines as Pi writes them",
    "sessiontree._orjson": "orjson, imported with ctrl-c held off (its init crashes on one)",
    "sessiontree._reader": "what a line counts as (CONTRACT §2 rule 3): the importers read other agents' lines by it",
    "sessiontree._shapes": "Pi's line shapes and key orders",
    "sessiontree._js": "JavaScript's values (generator)",
    "sessiontree._sizes": "sizes as text",
    "sessiontree._caches": "where the caches live, their settings (checked by the CLI before a command)",
    "sessiontree._lazy": "a package's names imported when first used",
    "sessiontree._rows": "the tables' row rules (Parquet export)",
    "sessiontree._table_schema": "the tables' schemas (Parquet export)",
    "sessiontree._tables": "one session's tables (Parquet export)",
}
"""What an application (or the view) may import of the core, and why."""

ALLOWED: dict[tuple[str, str], str] = {}
"""``(importer, imported)`` pairs that break a rule, each with its reason."""

EXTENSION = "sessiontree._sessiontree"  # the Rust extension (its stub: _sessiontree.pyi)


# --------------------------------------------------------------------- the graph
@functools.cache
def modules() -> dict[str, Path]:
    """Every module of the package by dotted name."""
    out = {EXTENSION: PKG / "_sessiontree.pyi"}
    for path in sorted(PKG.rglob("*.py")):
        parts = list(path.relative_to(PKG.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


def imports(name: str, path: Path, known: dict[str, Path]) -> set[str]:
    """The package's modules ``name`` imports, anywhere in it (functions and
    ``TYPE_CHECKING`` blocks included)."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(_tree(path)):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name.split(".")[0] == "sessiontree")
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base_parts = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                base = ".".join(base_parts + ([node.module] if node.module else []))
            else:
                base = node.module or ""
            if base.split(".")[0] != "sessiontree":
                continue
            for alias in node.names:
                sub = f"{base}.{alias.name}"
                found.add(sub if sub in known else base)
    found.discard(name)
    unknown = found - set(known)
    assert not unknown, f"{name} imports {unknown}, which are not modules of the package"
    return found


@functools.cache
def _tree(path: Path) -> ast.Module:
    return ast.parse(path.read_text(encoding="utf-8"), str(path))


def third_party(path: Path) -> set[str]:
    """Top-level names of what ``path`` imports from outside the package and the standard library."""
    out = set()
    for node in ast.walk(_tree(path)):
        names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                 else [node.module] if isinstance(node, ast.ImportFrom) and not node.level and node.module else [])
        for n in names:
            top = n.split(".")[0]
            if top != "sessiontree" and top not in sys.stdlib_module_names and top != "__future__":
                out.add(top)
    return out


@functools.cache
def graph() -> dict[str, set[str]]:
    known = modules()
    return {name: (imports(name, path, known) if path.suffix == ".py" else set()) for name, path in known.items()}


def layer(name: str) -> str:
    parts = name.split(".")
    if len(parts) == 1:
        return CORE  # the facade
    top = parts[1]
    if top == "view":
        return VIEW
    if top in APPLICATIONS:
        return APP
    if top.startswith("_") or top in CORE_PUBLIC:
        return CORE
    raise AssertionError(f"{name}: in no layer (tests/test_layers.py: APPLICATIONS or CORE_PUBLIC)")


def unit(name: str) -> str:
    """What a row of the table is: a core module of the root, else its top package."""
    parts = name.split(".")
    return "sessiontree" if len(parts) == 1 else parts[1]


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one node (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []
    counter = 0
    for start in sorted(edges):
        if start in index:
            continue
        work = [(start, iter(sorted(edges.get(start, ()))))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on.add(start)
        while work:
            v, it = work[-1]
            for w in it:
                if w not in index:
                    index[w] = low[w] = counter
                    counter += 1
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(edges.get(w, ())))))
                    break
                if w in on:
                    low[v] = min(low[v], index[w])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[v])
                if low[v] == index[v]:
                    comp = []
                    while True:
                        w = stack.pop()
                        on.discard(w)
                        comp.append(w)
                        if w == v:
                            break
                    if len(comp) > 1:
                        out.append(sorted(comp))
    return out


def breaks(edges: dict[str, set[str]]) -> list[str]:
    """Every import that breaks a rule (and is not in :data:`ALLOWED`)."""
    out = []
    for a, targets in sorted(edges.items()):
        for b in sorted(targets):
            if (a, b) in ALLOWED:
                continue
            la, lb = layer(a), layer(b)
            if RANK[lb] > RANK[la]:
                out.append(f"{a} ({la}) imports {b} ({lb}): a layer above its own")
            if la != CORE and lb == CORE and b not in CORE_API and b != EXTENSION:
                out.append(f"{a} ({la}) imports {b}: not in the core's API for the layers above (CORE_API)")
            if la != CORE and b == EXTENSION:
                out.append(f"{a} ({la}) imports the Rust extension: only the core does")
            parts = b.split(".")
            private = next((k for k in range(2, len(parts)) if parts[k].startswith("_")), None)
            if private is not None:
                owner = ".".join(parts[:private])
                if a != owner and not a.startswith(owner + "."):
                    out.append(f"{a} imports {b}: private to {owner} (use {owner}'s __init__)")
    return out


# --------------------------------------------------------------------- Rust
_RUST_COMMENT = re.compile(r"//[^\n]*")
_RUST_PATH = re.compile(r"\b(?:crate|super)::(\w+)")
_RUST_GROUP = re.compile(r"\b(?:crate|super)::\{([^}]*)\}")


def _crates() -> set[str]:
    """The crate's dependencies (``[dependencies]`` of Cargo.toml), as Rust names them."""
    text = (ROOT / "Cargo.toml").read_text()
    section = text.split("[dependencies]", 1)[1].split("\n[", 1)[0]
    return {line.split("=")[0].strip().replace("-", "_") for line in section.splitlines() if "=" in line}


@functools.cache
def rust_graph() -> tuple[dict[str, set[str]], dict[str, set[str]]]:
    """``(crate modules each module uses, dependencies it uses)`` for every module of
    ``src/`` but ``lib`` (which declares them all); a module's folder (``scan/``,
    ``persist/`` with its ``mod.rs``) is its own, tests included."""
    files = {p.stem: p for p in SRC.glob("*.rs") if p.stem != "lib"}
    files.update({p.parent.name: p for p in SRC.glob("*/mod.rs")})  # a module that is a folder
    crates = _crates()
    edges: dict[str, set[str]] = {}
    external: dict[str, set[str]] = {}
    for name, path in files.items():
        texts = [path.read_text()]
        if (SRC / name).is_dir():
            texts += [p.read_text() for p in sorted((SRC / name).glob("*.rs")) if p != path]
        code = _RUST_COMMENT.sub("", "\n".join(texts))
        used = set(_RUST_PATH.findall(code))
        for group in _RUST_GROUP.findall(code):
            used |= {item.strip().split("::")[0] for item in group.split(",") if item.strip()}
        edges[name] = {u for u in used if u in files and u != name}
        external[name] = {c for c in crates if re.search(rf"\b{c}::", code)}
    return edges, external


# --------------------------------------------------------------------- the table
def _row(name: str) -> str:
    """The table's row of a module: a core module of the root is its own row, a
    package (``catalog/``, ``view/``, an application) one row for all its modules."""
    parts = name.split(".")
    if len(parts) == 1:
        return "sessiontree"
    return parts[1] + "/" if (PKG / parts[1]).is_dir() else parts[1]


_TYPING_ONLY = {"_typeshed", "typing_extensions"}


def table() -> str:
    """The dependency table ARCHITECTURE.md shows: each row's layer and what it
    imports (rows of this package; other libraries after ``;``), then the Rust
    modules'."""
    edges = graph()
    known = modules()
    rows: dict[str, tuple[str, set[str], set[str]]] = {}
    for name, targets in edges.items():
        key = _row(name)
        lay, deps, libs = rows.setdefault(key, (layer(name), set(), set()))
        deps |= {_row(t) for t in targets} - {key}
        if known[name].suffix == ".py":
            libs |= third_party(known[name]) - _TYPING_ONLY
    order = sorted(rows, key=lambda k: (RANK[rows[k][0]], k.lstrip("_").lower()))
    lines = ["| layer | module or package | imports (of this package; other libraries after ;) |", "|---|---|---|"]
    for key in order:
        lay, deps, libs = rows[key]
        shown = ", ".join(f"`{d}`" for d in sorted(deps, key=lambda d: d.lstrip("_").lower())) or "—"
        if libs:
            shown += "; " + ", ".join(sorted(libs))
        lines.append(f"| {lay} | `{key}` | {shown} |")
    redges, rext = rust_graph()
    lines += ["", "| Rust module (`src/`) | uses (of the crate; other crates after ;) |", "|---|---|"]
    for m in sorted(redges):
        shown = ", ".join(f"`{d}`" for d in sorted(redges[m])) or "—"
        if rext[m]:
            shown += "; " + ", ".join(sorted(rext[m]))
        lines.append(f"| `{m}` | {shown} |")
    return "\n".join(lines)


def _doc_block() -> str:
    text = DOC.read_text(encoding="utf-8")
    a, b = text.find(BEGIN), text.find(END)
    assert a >= 0 and b > a, f"ARCHITECTURE.md has no {BEGIN} ... {END} block"
    return text[a + len(BEGIN):b].strip("\n")


# --------------------------------------------------------------------- tests
def test_every_module_is_in_a_layer() -> None:
    for name in modules():
        layer(name)


def test_no_layer_break() -> None:
    assert breaks(graph()) == []


def test_no_import_cycle() -> None:
    kept = {a: {b for b in bs if (a, b) not in ALLOWED} for a, bs in graph().items()}
    assert cycles(kept) == []


def test_no_rust_module_cycle() -> None:
    edges, _ = rust_graph()
    assert cycles(edges) == []


def test_allowed_exceptions_are_still_needed() -> None:
    edges = graph()
    for a, b in ALLOWED:
        assert b in edges.get(a, set()), f"ALLOWED lists {a} -> {b}, which no longer exists: remove it"


def test_the_rules_catch_what_they_forbid() -> None:
    """The checks themselves, on made-up edges: each rule has a break it reports."""
    made_up = {
        "sessiontree._manager": {"sessiontree.cli"},  # core -> application
        "sessiontree.view._text": {"sessiontree.export"},  # view -> application
        "sessiontree.export.html": {"sessiontree._persist", "sessiontree.cli._common"},  # internals, private
    }
    found = breaks(made_up)
    assert any("a layer above" in f and f.startswith("sessiontree._manager") for f in found)
    assert any("a layer above" in f and f.startswith("sessiontree.view._text") for f in found)
    assert any("CORE_API" in f and "_persist" in f for f in found)
    assert any("private to sessiontree.cli" in f for f in found)
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_architecture_shows_this_table() -> None:
    assert _doc_block() == table(), "docs/ARCHITECTURE.md is behind: python tests/test_layers.py --write"


if __name__ == "__main__":
    if "--write" in sys.argv:
        text = DOC.read_text(encoding="utf-8")
        a, b = text.find(BEGIN), text.find(END)
        DOC.write_text(text[: a + len(BEGIN)] + "\n" + table() + "\n" + text[b:], encoding="utf-8")
    print(table())
    problems = breaks(graph()) + [f"cycle: {c}" for c in cycles(graph())] + [
        f"Rust cycle: {c}" for c in cycles(rust_graph()[0])]
    for p in problems:
        print("BREAK:", p, file=sys.stderr)
    sys.exit(1 if problems else 0)

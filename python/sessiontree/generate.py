"""Deterministic synthetic Pi sessions (JSONL v3) for the demo, tests and benchmarks.

``generate_session`` simulates a long Pi coding-agent session: user turns, assistant
turns with thinking, text, tool calls and ``usage``, tool results (some of them very
large), bash executions, model and thinking-level changes, labels, a session name,
extension state (``custom``) and injected messages (``custom_message``), abandoned
branches with and without a ``branch_summary``, and compactions whose
``firstKeptEntryId`` lies on their own path. Text includes CJK, emoji, raw U+2028 /
U+2029, tabs, quotes and backslashes, because those are what make real files expensive
to scan and easy to get wrong.

The same seed gives the same bytes. Speed comes from never generating text character
by character: a few fixed text pools are built once per process and every long string
is a slice (or a join of slices) of a pool, picked by a seeded ``random.Random``.
"""

from __future__ import annotations

import base64
import errno
import os
import random
import time
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, BinaryIO, Callable

__all__ = ["GenerateStats", "generate_session", "generate_root", "parse_size"]

from ._orjson import orjson

from . import _shapes
from ._js import number_text as js_number
from ._jsonl import encode_entry
from ._output import open_output
from ._sizes import parse_size
from ._shapes import uuid7

# Lines must be JSON.stringify's bytes, which ``encode_entry`` produces. It runs orjson
# and then respells float tokens with a regex over the whole line whenever a digit is
# followed by "." or "e" anywhere (in text too), which caps it near 70 MB/s. Generated
# entries carry floats only in ``usage`` and no lone surrogates or huge ints (where
# orjson would differ), so ``usage`` is spelt with ``js_number`` and embedded as an
# ``orjson.Fragment`` in an otherwise float-free entry that plain orjson encodes
# exactly as ``encode_entry`` would. tests/test_generate.py checks this line by line.
_Fragment = getattr(orjson, "Fragment", None)
_dumps = orjson.dumps if _Fragment is not None else encode_entry

_USAGE = (
    '{"input":%d,"output":%d,"cacheRead":%d,"cacheWrite":%d,"totalTokens":%d,'
    '"cost":{"input":%s,"output":%s,"cacheRead":%s,"cacheWrite":%s,"total":%s}}'
)


def _usage(inp: int, out: int, cr: int, cw: int, costs: tuple[float, ...]) -> Any:
    if _Fragment is None:
        c = dict(zip(("input", "output", "cacheRead", "cacheWrite", "total"), costs))
        return {"input": inp, "output": out, "cacheRead": cr, "cacheWrite": cw,
                "totalTokens": inp + out + cr + cw, "cost": c}
    text = _USAGE % (inp, out, cr, cw, inp + out + cr + cw, *map(js_number, costs))
    return _Fragment(text.encode("ascii"))


_FLUSH_BYTES = 8 << 20
_BASE_MS = 1_762_160_000_000  # 2025-11-03, the era of the corpus


@dataclass
class GenerateStats:
    """What ``generate_session`` wrote.

    Attributes:
        path: the file written.
        bytes: its size in bytes (header included).
        entries: number of entry lines (header excluded).
        by_type: entry count per ``type``.
        by_role: ``message`` entry count per ``message.role``.
        branch_points: entries with more than one child.
        compactions: compaction entries.
        branch_summaries: branch_summary entries.
        labels: label entries.
        leaf_id: the leaf when the file is opened (the last entry's id, or where the
            last ``leaf`` entry of a ``harness`` file moved it).
        session_id: the header's id.
        seconds: wall time spent.
    """

    path: str
    bytes: int = 0
    entries: int = 0
    by_type: dict[str, int] = field(default_factory=dict)
    by_role: dict[str, int] = field(default_factory=dict)
    branch_points: int = 0
    compactions: int = 0
    branch_summaries: int = 0
    labels: int = 0
    leaf_id: str | None = None
    session_id: str = ""
    seconds: float = 0.0

    @property
    def mb_per_s(self) -> float:
        """Write throughput in MB/s (10**6 bytes)."""
        return self.bytes / 1e6 / self.seconds if self.seconds > 0 else 0.0


# --------------------------------------------------------------------------------------
# Fixed text pools (independent of the seed, built once per process)
# --------------------------------------------------------------------------------------

_WORDS = (
    "session tree entry leaf branch parser context compaction summary token model "
    "index offset buffer stream writer reader lock append header migrate label cursor "
    "config server client request response handler router cache queue worker retry "
    "timeout error result value option promise async await import export function "
    "interface type const let return class extends implements module package test "
    "fixture snapshot coverage build lint format deploy release commit merge rebase"
).split()

_NON_ASCII = (
    "日本語のテキスト", "中文测试", "한국어 텍스트", "𠀋𡈽𡌛", "😀", "🚀", "✅", "❌",
    "👩\u200d💻", "🇯🇵", "é", "ü", "ß", "Å", "«guillemets»", "„low“", "—", "…",
    "\u2028", "\u2029", "\u00a0", "\u200b", "𝔘𝔫𝔦𝔠𝔬𝔡𝔢", "Ω", "λ→μ", "∑", "✓",
)

_PATHS = (
    "src/index.ts", "src/session/manager.ts", "src/session/tree.ts", "src/parser.ts",
    "src/cli/main.ts", "src/utils/strings.ts", "src/api/client.ts", "src/api/routes.ts",
    "tests/parser.test.ts", "tests/session.test.ts", "package.json", "tsconfig.json",
    "README.md", "docs/architecture.md", "src/core/agent-loop.ts", "src/tools/bash.ts",
    "src/tools/read.ts", "src/tools/edit.ts", "src/i18n/ja.json", "scripts/build.mjs",
)

_USER_PROMPTS = (
    "Please read {p} and explain what it does.",
    "The tests in {p} are failing since the last commit. Can you find out why?",
    "Refactor {p} so that the parsing and the I/O are separate.",
    "Add error handling to {p}: a missing file should give one clear message, not a stack trace.",
    "Run the test suite and fix whatever breaks.",
    "Can you make the build faster? It takes almost a minute now.",
    "Let's add a --json flag to the list command.",
    "Why is memory growing when we open large sessions?",
    "Write a regression test for the bug we just fixed.",
    "Update the docs for the new branch command.",
    "{p} の型エラーを直してください。",
    "请帮我检查 {p} 里的内存泄漏问题。",
    "{p} 파일에서 버그를 찾아 주세요.",
    "Looks good 👍 now commit it with a sensible message.",
    "Hmm, that didn't work — the output still shows \"undefined\". Try again?",
    "Use a Map instead of the object lookup in {p}, and keep the order stable.",
    "What does `git log --oneline -5` say? I think someone force-pushed.",
    "Continue.",
    "Stop — revert the last change to {p} and try a different approach.",
    "Rename `getLeaf` to `getLeafEntry` everywhere and update the callers.",
)

_ASSISTANT_OPENERS = (
    "I'll start by reading {p}.",
    "Let me look at {p} first.",
    "I'll run the tests to see the current state.",
    "Let me search for the call sites.",
    "I'll check the git history for {p}.",
    "First I'll reproduce the failure.",
    "I'll make the change in {p} and then run the tests.",
    "Let me inspect the directory layout.",
)

_ASSISTANT_CLOSERS = (
    "Done. The tests pass now ✅ — the problem was an off-by-one in the offset computation.",
    "I've updated {p}. Summary of the changes:\n\n- split parsing from I/O\n- added a `readLines` helper\n- kept the public API unchanged",
    "All 214 tests pass. I also added a regression test for the empty-file case.",
    "The build now takes 18 s instead of 52 s: the type check ran twice.",
    "I reverted the change to {p}. The other approach is to stream the file instead of reading it whole.",
    "完了しました。{p} の型エラーは修正済みです。",
    "已修复。问题出在 {p} 的缓存没有释放。",
    "The output is correct now:\n\n```\n$ npm test\n  ✓ 214 passed\n```",
    "I couldn't reproduce it locally. Can you share the exact command you ran?",
    "Committed as `fix(parser): handle CRLF line endings` 🎉",
)

_THINKING = (
    "The user wants me to look at {p}. I should read it before changing anything, then run the tests.",
    "The failure mentions an undefined offset. That usually means the index was built before the last append. Let me check where refresh is called.",
    "Two options: patch the call site, or fix the helper. The helper is used in 14 places, so fixing it there is safer — but I need to check the tests that rely on the old behaviour.",
    "Hmm, the test output shows a timeout, not an assertion failure. Maybe the lock is never released. Let me grep for flock.",
    "I should keep the change minimal and not touch the public API.",
    "ユーザーは型エラーの修正を求めている。まずファイルを読む。",
)

_BASH_COMMANDS = (
    "npm test", "npm run build", "git status", "git diff --stat", "git log --oneline -10",
    "ls -la src", "rg -n \"export function\" src", "cat package.json", "node --version",
    "du -sh node_modules", "find . -name '*.test.ts' | head -20", "npx tsc --noEmit",
    "pytest -q tests/test_parser.py", "cargo test --quiet", "make lint",
)

_CODE_LINES = (
    "export function {w}{W}(input: string): {W} {{",
    "  const {w} = await load{W}(path, {{ encoding: \"utf8\" }});",
    "  if (!{w}) throw new Error(`missing {w}: ${{path}}`);",
    "  return {w}.map((x) => x.{w2}).filter(Boolean);",
    "}}",
    "import {{ {W}, {W2} }} from \"./{w}\";",
    "// TODO({w}): handle the \\r\\n case and the \"quoted\" form",
    "interface {W}Options {{ {w}: number; {w2}?: string }}",
    "  for (let i = 0; i < {w}.length; i++) {{ total += {w}[i].size; }}",
    "const RE_{WU} = /^(\\d+)\\.(\\w*)\\s+\"([^\"]*)\"$/;",
    "    \"{w}\": \"^{n}.{n2}.0\",",
    "\tlog.debug(\"{w} took %d ms\", elapsed);",
    "  // {x}",
    "def {w}_{w2}(self, {w}: int = {n}) -> None:",
    "        raise ValueError(f\"bad {w}: {{{w}!r}}\")",
)

_LOG_LINES = (
    "[{t}] INFO  {w}: loaded {n} entries in {n2} ms",
    "[{t}] WARN  {w}: retrying request ({n}/5) after ECONNRESET",
    "[{t}] ERROR {w}: Unexpected token '}}' at line {n} column {n2}",
    "  ✓ {w} {w2} handles empty input ({n} ms)",
    "  ✗ {w} {w2} keeps the order stable",
    "    at {W}.{w} (src/{w}.ts:{n}:{n2})",
    "src/{w}.ts:{n}:{n2}: error TS2345: Argument of type 'string' is not assignable to parameter of type '{W}'.",
    "src/{w}/{w2}.ts:{n}:  export const {w} = {n2}; // {x}",
    "drwxr-xr-x  {n} user user  4096 Nov  3 09:14 {w}",
    "-rw-r--r--  1 user user {n}{n2} Nov  3 09:14 {w}_{w2}.ts",
    "{{\"level\":\"info\",\"msg\":\"{w} done\",\"n\":{n},\"path\":\"C:\\\\Users\\\\dev\\\\{w}\"}}",
    "@@ -{n},7 +{n},9 @@ export class {W} {{",
    "+  private {w}: Map<string, {W}> = new Map();",
    "-  private {w}: Record<string, {W}> = {{}};",
)


def _fill(r: Callable[[], float], template: str, unicode: bool) -> str:
    # ``r`` is a bound ``Random.random``: indexing by ``int(r() * n)`` is several times
    # cheaper than ``choice``/``randint``, and this runs 30,000 times per process.
    words, nw = _WORDS, len(_WORDS)
    w, w2 = words[int(r() * nw)], words[int(r() * nw)]
    x = " ".join([words[int(r() * nw)] for _ in range(2 + int(r() * 7))])
    if unicode and r() < 0.5:
        na = len(_NON_ASCII)
        x += " " + _NON_ASCII[int(r() * na)] + " " + _NON_ASCII[int(r() * na)]
    return template.format(
        w=w, w2=w2, W=w.capitalize(), W2=w2.capitalize(), WU=w.upper(),
        n=1 + int(r() * 999), n2=int(r() * 100),
        t=f"2025-11-03T09:{10 + int(r() * 50)}:{10 + int(r() * 50)}.{100 + int(r() * 900)}Z", x=x,
    )


class _Pool:
    """A long string of lines; ``take`` returns a slice starting on a line start."""

    def __init__(self, text: str) -> None:
        self.text = text
        starts = [0]
        find = text.find
        i = find("\n")
        while i != -1:
            starts.append(i + 1)
            i = find("\n", i + 1)
        self.starts = starts[:-1]

    def take(self, rng: random.Random, n: int) -> str:
        text = self.text
        if n <= 0:
            return ""
        parts = []
        while n > 0:
            a = self.starts[rng.randrange(len(self.starts))]
            piece = text[a : a + n]
            parts.append(piece)
            n -= len(piece)
        return parts[0] if len(parts) == 1 else "".join(parts)


@lru_cache(maxsize=1)
def _pools() -> tuple[_Pool, _Pool, str]:
    """(ASCII code/log pool, pool with non-ASCII lines, base64 pool): fixed for all seeds."""
    rng = random.Random(0x5E55107)
    r = rng.random
    templates = _CODE_LINES + _LOG_LINES
    nt = len(templates)
    ascii_lines = [_fill(r, templates[int(r() * nt)], False) for _ in range(12000)]
    mixed_lines = [_fill(r, templates[int(r() * nt)], True) for _ in range(3000)]
    b64 = base64.b64encode(rng.randbytes(768 * 1024)).decode("ascii")
    return _Pool("\n".join(ascii_lines) + "\n"), _Pool("\n".join(mixed_lines) + "\n"), b64


# --------------------------------------------------------------------------------------
# The simulation
# --------------------------------------------------------------------------------------

# (provider, api, modelId, $ per million tokens: input, output, cacheRead, cacheWrite)
_MODELS = (
    ("anthropic", "anthropic-messages", "claude-sonnet-4-5", 3, 15, 0.3, 3.75),
    ("anthropic", "anthropic-messages", "claude-opus-4-5", 5, 25, 0.5, 6.25),
    ("openai", "openai-responses", "gpt-5.1-codex", 1.25, 10, 0.125, 0),
    ("google", "google-generative-ai", "gemini-2.5-pro", 1.25, 10, 0.31, 0),
)
_THINKING_LEVELS = ("off", "minimal", "low", "medium", "high", "xhigh")
_LABELS = ("checkpoint", "before refactor", "works ✅", "good state", "バグ修正", "try 2", "🏷️ keep")
_NAMES = ("Refactor the session parser", "Fix flaky tests", "セッション管理の改善", "Memory leak hunt 🐛")
_TOOLS = ("read", "bash", "edit", "write", "grep", "find", "ls")
# turn -> the value of the extras() draw that picks: label, custom, custom_message,
# model_change, thinking_level_change, bash execution.
_FORCED = {3: 0.08, 5: 0.10, 6: 0.12, 7: 0.01, 8: 0.04, 10: 0.15}


class _Writer:
    """Encodes entries, assigns ids/timestamps, tracks the path and the statistics."""

    def __init__(self, f: BinaryIO, rng: random.Random, stats: GenerateStats,
                 size_limit: int | None, entry_limit: int | None,
                 on_progress: Callable[[int, int], None] | None, now_ms: int,
                 harness: bool = False) -> None:
        self.harness = harness
        self.f = f
        self.rng = rng
        self.stats = stats
        self.size_limit = size_limit
        self.entry_limit = entry_limit
        self.on_progress = on_progress
        self.buf: list[bytes] = []
        self.buf_bytes = 0
        self.written = 0
        self.ids: set[str] = set()
        self.child_count: dict[str, int] = {}
        self.path: list[str] = []  # root -> leaf
        self.path_kind: list[str] = []  # "user" for user messages, else the entry type/role
        self.compaction_at: list[int] = []  # indices in path of compactions
        self.leaf: str | None = None
        self.now_ms = now_ms

    # -- limits -------------------------------------------------------------------------
    def full(self) -> bool:
        if self.entry_limit is not None and self.stats.entries >= self.entry_limit:
            return True
        if self.size_limit is not None and self.written + self.buf_bytes >= self.size_limit:
            return True
        return False

    # -- ids and time -------------------------------------------------------------------
    def new_id(self) -> str:
        while True:
            i = f"{self.rng.getrandbits(32):08x}"
            if i not in self.ids:
                self.ids.add(i)
                return i

    def tick(self, lo: int, hi: int) -> int:
        self.now_ms += self.rng.randint(lo, hi)
        return self.now_ms

    @staticmethod
    def iso(ms: int) -> str:
        s, m = divmod(ms, 1000)
        return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(s)) + f".{m:03d}Z"

    # -- output ---------------------------------------------------------------------------
    def raw(self, line: bytes) -> None:
        self.buf.append(line)
        self.buf.append(b"\n")
        self.buf_bytes += len(line) + 1
        if self.buf_bytes >= _FLUSH_BYTES:
            self.flush()

    def flush(self) -> None:
        if self.buf:
            self.f.writelines(self.buf)
            self.written += self.buf_bytes
            self.buf.clear()
            self.buf_bytes = 0
            if self.on_progress is not None:
                total = self.size_limit if self.size_limit is not None else 0
                self.on_progress(self.written, total)

    def close(self) -> None:
        self.flush()

    def emit(self, etype: str, fields: dict[str, Any], *, kind: str | None = None,
             custom_type: str | None = None, gap: tuple[int, int] = (300, 9000)) -> str:
        """Append one entry as a child of the leaf; returns its id."""
        eid = self.new_id()
        parent = self.leaf
        ts = self.iso(self.tick(*gap))
        if custom_type is not None:
            entry = _shapes.entry(etype, eid, parent, ts, customType=custom_type, **fields)
        else:
            entry = _shapes.entry(etype, eid, parent, ts, **fields)
        self.raw(_dumps(entry))
        st = self.stats
        st.entries += 1
        st.by_type[etype] = st.by_type.get(etype, 0) + 1
        if etype == "message":
            role = fields["message"]["role"]
            st.by_role[role] = st.by_role.get(role, 0) + 1
        if parent is not None:
            n = self.child_count.get(parent, 0) + 1
            self.child_count[parent] = n
            if n == 2:
                st.branch_points += 1
        if etype == "compaction":
            self.compaction_at.append(len(self.path))
        self.path.append(eid)
        self.path_kind.append(kind or etype)
        self.leaf = eid
        st.leaf_id = eid
        return eid

    def move_leaf(self, index: int | None) -> None:
        """Make ``path[index]`` the leaf (``None``: before the first entry, a new root).

        With agent-core's semantics (``harness``) the move is written as a ``leaf``
        entry, a child of the leaf before it (``setLeafId``)."""
        if self.harness:
            target = None if index is None else self.path[index]
            old_path, old_kind, old_comp = list(self.path), list(self.path_kind), list(self.compaction_at)
            self.emit("leaf", {"targetId": target}, gap=(200, 5000))
            self.path, self.path_kind, self.compaction_at = old_path, old_kind, old_comp
        keep = 0 if index is None else index + 1
        del self.path[keep:]
        del self.path_kind[keep:]
        while self.compaction_at and self.compaction_at[-1] >= keep:
            self.compaction_at.pop()
        self.leaf = self.path[-1] if self.path else None
        if self.harness:
            self.stats.leaf_id = self.leaf


class _Session:
    """Pi's behaviour, turn by turn."""

    def __init__(self, w: _Writer, rng: random.Random, payload_scale: float) -> None:
        self.w = w
        self.rng = rng
        self.scale = payload_scale
        limit = w.size_limit
        self.max_output = max(2000, limit // 40) if limit is not None else 1 << 62
        self.ascii, self.mixed, self.b64 = _pools()
        self.model: tuple[Any, ...] = _MODELS[0]
        self.thinking = "medium"
        self.call_n = 0
        self.context_tokens = 0
        self.next_compaction = rng.randint(30, 60)  # the first one comes early, so small files have one
        self.since_compaction = 0
        self.named = False
        self.turn = 0

    # -- text -----------------------------------------------------------------------------
    def text(self, n: int, unicode_share: float = 0.15) -> str:
        n = int(n * self.scale)
        pool = self.mixed if self.rng.random() < unicode_share else self.ascii
        return pool.take(self.rng, n)

    def pick(self, options: tuple[str, ...]) -> str:
        return self.rng.choice(options).replace("{p}", self.rng.choice(_PATHS))

    def output_size(self) -> int:
        r = self.rng.random()
        if r < 0.60:
            n = self.rng.randint(80, 3000)
        elif r < 0.85:
            n = self.rng.randint(3000, 30000)
        elif r < 0.97:
            n = self.rng.randint(30000, 150000)
        else:
            n = self.rng.randint(150000, 1500000)
        # In a small file one huge output would crowd out the turns that give it its
        # shape (branches, compactions...): no output exceeds 1/40 of the target size.
        return min(n, self.max_output)

    def usage(self, out_chars: int) -> Any:
        rng = self.rng
        _, _, _, p_in, p_out, p_cr, p_cw = self.model
        output = max(1, out_chars // 4 + rng.randint(0, 400))
        total_ctx = max(1000, self.context_tokens)
        cache_read = int(total_ctx * rng.uniform(0.6, 0.95))
        cache_write = rng.choice((0, 0, rng.randint(1000, 20000)))
        inp = max(1, total_ctx - cache_read)
        c_in = (p_in / 1000000) * inp
        c_out = (p_out / 1000000) * output
        c_cr = (p_cr / 1000000) * cache_read
        c_cw = (p_cw / 1000000) * cache_write
        return _usage(inp, output, cache_read, cache_write, (c_in, c_out, c_cr, c_cw, c_in + c_out + c_cr + c_cw))

    # -- entries --------------------------------------------------------------------------
    def message(self, msg: dict[str, Any], kind: str | None = None, gap: tuple[int, int] = (300, 9000)) -> str:
        self.context_tokens += self._tokens(msg)
        self.since_compaction += 1
        return self.w.emit("message", {"message": msg}, kind=kind or msg["role"], gap=gap)

    @staticmethod
    def _tokens(msg: dict[str, Any]) -> int:
        c = msg.get("content")
        if isinstance(c, str):
            return len(c) // 4
        if isinstance(c, list):
            n = 0
            for b in c:
                n += len(b.get("text") or b.get("thinking") or "") // 4 + 20
            return n
        return len(msg.get("output", "")) // 4

    def user(self) -> None:
        rng = self.rng
        text = self.pick(_USER_PROMPTS)
        if rng.random() < 0.2:
            text += "\n\n```\n" + self.text(rng.randint(100, 2500), 0.4) + "```"
        ms = self.w.tick(2000, 90000)
        if rng.random() < 0.6:
            content: Any = text
        else:
            content = [{"type": "text", "text": text}]
            if rng.random() < 0.08:  # a pasted screenshot
                n = rng.randint(2000, 120000) // 4 * 4
                start = rng.randrange(0, len(self.b64) - n) // 4 * 4
                content.append({"type": "image", "data": self.b64[start:start + n], "mimeType": "image/png"})
        self.message({"role": "user", "content": content, "timestamp": ms}, kind="user", gap=(5, 400))

    def assistant(self, final: bool) -> list[tuple[str, str]] | None:
        """One assistant message; returns its tool calls as (id, name), ``None`` if it failed."""
        rng = self.rng
        provider, api, model_id = self.model[:3]
        blocks: list[dict[str, Any]] = []
        if self.thinking != "off" and rng.random() < 0.7:
            thought = self.pick(_THINKING)
            if rng.random() < 0.3:
                thought += "\n\n" + self.text(rng.randint(200, 3000), 0.1)
            sig = ""
            if provider == "anthropic":
                n = rng.randint(200, 1200)
                s = rng.randrange(0, len(self.b64) - n)
                sig = self.b64[s:s + n]
            blocks.append({"type": "thinking", "thinking": thought, "thinkingSignature": sig})
        calls: list[tuple[str, str]] | None = []
        if final:
            blocks.append({"type": "text", "text": self.pick(_ASSISTANT_CLOSERS)})
            stop = "stop"
        else:
            if rng.random() < 0.7:
                blocks.append({"type": "text", "text": self.pick(_ASSISTANT_OPENERS)})
            for _ in range(rng.choice((1, 1, 1, 2, 3))):
                name = rng.choice(_TOOLS)
                self.call_n += 1
                cid = (f"toolu_{rng.getrandbits(64):016x}{self.call_n:06d}" if provider == "anthropic"
                       else f"call_{rng.getrandbits(48):012x}_{self.call_n}")
                blocks.append({"type": "toolCall", "id": cid, "name": name, "arguments": self.arguments(name)})
                calls.append((cid, name))  # type: ignore[union-attr]
            stop = "toolUse"
        out_chars = sum(len(b.get("text") or b.get("thinking") or "") for b in blocks)
        ms = self.w.tick(500, 40000)
        msg: dict[str, Any] = {"role": "assistant", "content": blocks, "api": api, "provider": provider,
                               "model": model_id, "usage": self.usage(out_chars), "stopReason": stop}
        r = rng.random()
        if r < 0.015:
            # A failed request: Pi keeps what streamed before the failure, never a tool
            # call without its result, and the user speaks next.
            blocks[:] = [b for b in blocks if b["type"] != "toolCall"]
            if r < 0.01:
                msg["stopReason"] = "error"
                msg["errorMessage"] = '529 {"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}'
            else:
                msg["stopReason"] = "aborted"
                msg["errorMessage"] = "Request was aborted."
            calls = None
        msg["timestamp"] = ms
        self.message(msg, kind="assistant", gap=(5, 900))
        return calls

    def arguments(self, name: str) -> dict[str, Any]:
        rng = self.rng
        p = rng.choice(_PATHS)
        if name == "read":
            return {"path": p} if rng.random() < 0.7 else {"path": p, "offset": rng.randint(1, 500), "limit": 200}
        if name == "bash":
            a: dict[str, Any] = {"command": rng.choice(_BASH_COMMANDS)}
            if rng.random() < 0.3:
                a["timeout"] = 120
            return a
        if name == "edit":
            return {"path": p, "oldText": self.text(rng.randint(40, 1500), 0.1),
                    "newText": self.text(rng.randint(40, 1500), 0.1)}
        if name == "write":
            return {"path": p, "content": self.text(rng.randint(200, 20000), 0.2)}
        if name == "grep":
            return {"pattern": rng.choice(_WORDS), "path": "src"}
        if name == "find":
            return {"pattern": "*.ts", "path": "src"}
        return {"path": "src"}

    def tool_result(self, call_id: str, name: str) -> None:
        rng = self.rng
        is_error = rng.random() < 0.06
        details: Any = None
        if is_error:
            out = rng.choice((f"ENOENT: no such file or directory, open '{rng.choice(_PATHS)}'",
                              "Command exited with code 1", "Operation aborted"))
        elif name == "edit":
            out = f"Successfully replaced text in {rng.choice(_PATHS)}."
            details = {"diff": self.text(rng.randint(100, 4000), 0.1)}
        elif name == "write":
            out = f"Successfully wrote {rng.randint(100, 20000)} bytes to {rng.choice(_PATHS)}"
        else:
            out = self.text(self.output_size(), 0.15)
            if name == "bash" and rng.random() < 0.5:
                details = {"exitCode": rng.choice((0, 0, 0, 1, 2)), "durationMs": rng.randint(20, 60000)}
        msg: dict[str, Any] = {"role": "toolResult", "toolCallId": call_id, "toolName": name,
                               "content": [{"type": "text", "text": out}]}
        if details is not None:
            msg["details"] = details
        msg["isError"] = is_error
        msg["timestamp"] = self.w.tick(20, 20000)
        self.message(msg, kind="toolResult", gap=(1, 50))

    def bash_execution(self) -> None:
        rng = self.rng
        msg: dict[str, Any] = {"role": "bashExecution", "command": rng.choice(_BASH_COMMANDS),
                               "output": self.text(self.output_size() // 2, 0.15),
                               "exitCode": rng.choice((0, 0, 0, 1)), "cancelled": False,
                               "truncated": rng.random() < 0.1}
        if msg["truncated"]:
            msg["fullOutputPath"] = f"/tmp/pi-bash-{rng.getrandbits(64):016x}.log"
        msg["timestamp"] = self.w.tick(1000, 30000)
        if rng.random() < 0.2:
            msg["excludeFromContext"] = True
        self.message(msg, kind="bashExecution", gap=(1, 200))

    def compaction(self) -> None:
        """Pi's auto-compaction: summarise, keep the recent turns from a user message on."""
        w, rng = self.w, self.rng
        lo = w.compaction_at[-1] + 1 if w.compaction_at else 0
        users = [i for i in range(lo, len(w.path)) if w.path_kind[i] == "user"]
        if len(users) < 2:
            return
        keep = users[max(1, len(users) - rng.randint(1, 4))]
        files = sorted({rng.choice(_PATHS) for _ in range(rng.randint(1, 6))})
        summary = (
            "## Goal\n" + self.pick(_USER_PROMPTS) + "\n\n## Constraints & Preferences\n- keep the public API\n"
            "- 日本語のコメントは残す\n\n## Progress\n### Done\n- [x] " + self.pick(_ASSISTANT_OPENERS)
            + "\n### In Progress\n- [ ] " + self.pick(_THINKING) + "\n\n## Key Decisions\n- **Streaming**: "
            + self.text(rng.randint(100, 1200), 0.3) + "\n## Next Steps\n1. run the full test suite\n"
        )
        fields: dict[str, Any] = {"summary": summary, "firstKeptEntryId": w.path[keep],
                                  "tokensBefore": self.context_tokens}
        if rng.random() < 0.9:
            fields["details"] = {"readFiles": files, "modifiedFiles": files[: len(files) // 2]}
        if rng.random() < 0.1:
            fields["fromHook"] = rng.random() < 0.5
        w.emit("compaction", fields, gap=(5000, 40000))
        w.stats.compactions += 1
        self.context_tokens = self.context_tokens // 5
        self.since_compaction = 0
        self.next_compaction = rng.randint(60, 160)

    def branch(self, summary: bool | None = None) -> None:
        """Go back to an earlier entry of the current path (Pi's /tree), maybe with a summary."""
        w, rng = self.w, self.rng
        n = len(w.path)
        if n < 6:
            return
        back = rng.randint(2, min(n - 1, 60 if rng.random() < 0.9 else n - 1))
        target = n - 1 - back
        w.move_leaf(target)
        if summary if summary is not None else rng.random() < 0.5:
            fields: dict[str, Any] = {"fromId": w.path[target],
                                      "summary": "The user explored a different approach: "
                                      + self.pick(_ASSISTANT_CLOSERS) + "\n" + self.text(rng.randint(50, 800), 0.3)}
            if rng.random() < 0.8:
                fields["details"] = {"readFiles": [rng.choice(_PATHS)], "modifiedFiles": []}
            if rng.random() < 0.2:
                fields["fromHook"] = True
            w.emit("branch_summary", fields, gap=(1000, 20000))
            w.stats.branch_summaries += 1

    def label(self) -> None:
        w, rng = self.w, self.rng
        target = w.path[rng.randrange(max(0, len(w.path) - 200), len(w.path))]
        fields: dict[str, Any] = {"targetId": target}
        if rng.random() < 0.9:
            fields["label"] = rng.choice(_LABELS)
        w.emit("label", fields, gap=(500, 20000))
        w.stats.labels += 1

    def extras(self) -> None:
        """Occasional non-message entries between turns."""
        w, rng = self.w, self.rng
        r = rng.random()
        # Early turns force one of each kind, so that even small files have them all.
        r = _FORCED.get(self.turn, r)
        if r < 0.03:
            self.model = rng.choice(_MODELS)
            w.emit("model_change", {"provider": self.model[0], "modelId": self.model[2]})
        elif r < 0.06:
            self.thinking = rng.choice(_THINKING_LEVELS)
            w.emit("thinking_level_change", {"thinkingLevel": self.thinking})
        elif r < 0.09:
            self.label()
        elif r < 0.11:
            data = {"todos": [{"text": self.pick(_ASSISTANT_OPENERS), "done": rng.random() < 0.5}
                              for _ in range(rng.randint(1, 5))], "turn": self.turn}
            w.emit("custom", {"data": data}, custom_type="todo/state")
        elif r < 0.13:
            fields: dict[str, Any] = {"content": "Reminder: plan mode is on — do not edit files. 📋",
                                      "display": rng.random() < 0.5}
            if rng.random() < 0.5:
                fields["details"] = {"mode": "plan", "turn": self.turn}
            w.emit("custom_message", fields, custom_type="plan-mode/reminder")
        elif r < 0.16:
            self.bash_execution()
        elif r < 0.165:
            w.emit("session_info", {"name": rng.choice(_NAMES)})
        elif w.harness and r < 0.19:
            w.emit("active_tools_change", {"activeToolNames": rng.sample(_TOOLS, rng.randint(0, 4))})

    def run(self) -> None:
        w, rng = self.w, self.rng
        w.emit("model_change", {"provider": self.model[0], "modelId": self.model[2]})
        if w.full():
            return
        w.emit("thinking_level_change", {"thinkingLevel": self.thinking})
        while not w.full():
            self.turn += 1
            self.user()
            failed = False
            for _ in range(rng.choice((0, 1, 1, 2, 2, 3, 4, 6))):
                if w.full():
                    return
                calls = self.assistant(final=False)
                if calls is None:
                    failed = True
                    break
                for cid, name in calls:
                    if w.full():
                        return
                    self.tool_result(cid, name)
            if w.full():
                return
            if not failed:
                self.assistant(final=True)
            if not self.named and self.turn >= 2 and not w.full():
                w.emit("session_info", {"name": rng.choice(_NAMES)})
                self.named = True
            if w.full():
                return
            self.extras()
            if w.full():
                return
            if self.turn == 5 or self.since_compaction >= self.next_compaction:
                self.compaction()  # turn 5 always compacts, so that even small files have one
            if w.full():
                return
            if self.turn in (4, 9) or rng.random() < 0.05:
                # Turns 4 and 9 always branch, so that even small files have branches.
                self.branch(summary=None if self.turn > 9 else self.turn == 4)
            elif rng.random() < 0.0008:
                w.move_leaf(None)  # Pi's resetLeaf: the next entry is a new root


def _uuid7(rng: random.Random, ms: int) -> str:
    rand_a = rng.getrandbits(12)
    return uuid7(ms, rand_a, rng.getrandbits(62))


def _start(rng: random.Random) -> tuple[int, str]:
    """The header's time (epoch ms) and session id: the first draws of a session's ``rng``."""
    ms = _BASE_MS + rng.randrange(0, 30 * 86_400_000)
    return ms, _uuid7(rng, ms)


def _write_session(path: str, rng: random.Random, start: tuple[int, str], stats: GenerateStats,
                   size_bytes: int | None, entries: int | None, cwd: str, payload_scale: float,
                   on_progress: Callable[[int, int], None] | None, replace: bool,
                   harness: bool = False) -> None:
    header_ms, stats.session_id = start
    with open_output(path, replace=replace) as out:
        w = _Writer(out.file, rng, stats, size_bytes, entries, on_progress, header_ms, harness)
        w.raw(_dumps(_shapes.header(stats.session_id, w.iso(header_ms), cwd)))
        if not w.full():
            _Session(w, rng, payload_scale).run()
        w.close()
    stats.bytes = w.written


def generate_session(
    path: str | os.PathLike[str],
    *,
    size_bytes: int | None = None,
    entries: int | None = None,
    seed: int = 0,
    cwd: str = "/home/user/project",
    payload_scale: float = 1.0,
    on_progress: Callable[[int, int], None] | None = None,
    overwrite: bool = True,
    harness: bool = False,
) -> GenerateStats:
    """Write a realistic synthetic Pi session (JSONL v3) to ``path``.

    The file is what Pi itself would write for such a session: keys in Pi's order,
    compact JSON, non-ASCII unescaped, one entry per line. The same arguments always
    give the same bytes.

    Written as every command's output is (``_output.open_output``): a regular file
    (or nothing) at ``path`` gets the session through a temporary file in the same
    folder renamed at the end, so it never holds a partial session (an interrupted or
    failed run, SIGINT / SIGTERM / SIGHUP included, removes the temporary file; one
    left by a killed run is removed by the next run in that folder); a symbolic link
    is followed; ``-``, a FIFO or a device is written as a stream.

    Args:
        path: the file to write (``-``: standard output).
        size_bytes: stop after the entry that makes the file at least this large.
        entries: stop after this many entries (header excluded).
        seed: selects the session; equal seeds give byte-identical files.
        cwd: the header's working directory.
        payload_scale: multiplies the length of generated text (tool outputs, file
            contents, pasted code); ``0.01`` gives many small entries per megabyte, for
            tests of deep trees.
        on_progress: called as ``on_progress(bytes_written, size_bytes or 0)`` after each
            chunk written (every few megabytes).
        overwrite: replace an existing ``path`` (default); when false an existing
            ``path`` raises :class:`FileExistsError` (checked before writing, and again,
            atomically, when the finished file is moved into place).
        harness: write as agent-core's harness does (``packages/agent/src/harness/
            session/jsonl-storage.ts``): every leaf move is a ``leaf`` entry, and some
            turns change the active tools (``active_tools_change``).

    Returns:
        GenerateStats describing the file.

    Raises:
        ValueError: when neither ``size_bytes`` nor ``entries`` is given, or one is negative.
        FileExistsError: ``path`` exists and ``overwrite`` is false.
        OSError: when the file cannot be written.
    """
    if size_bytes is None and entries is None:
        raise ValueError("give size_bytes or entries")
    if (size_bytes is not None and size_bytes < 0) or (entries is not None and entries < 0):
        raise ValueError("size_bytes and entries must not be negative")
    t0 = time.perf_counter()
    path = os.fspath(path)
    if not overwrite and os.path.lexists(path):
        raise FileExistsError(errno.EEXIST, "file exists", path)
    rng = random.Random(seed)
    stats = GenerateStats(path=path)
    _write_session(path, rng, _start(rng), stats, size_bytes, entries, cwd, payload_scale, on_progress, overwrite,
                   harness)
    stats.seconds = time.perf_counter() - t0
    return stats


def generate_root(
    root: str | os.PathLike[str],
    *,
    sessions: int,
    total_bytes: int,
    projects: int = 10,
    seed: int = 0,
    on_progress: Callable[[int, int], None] | None = None,
) -> list[GenerateStats]:
    """Write synthetic sessions into a sessions root in Pi's layout, as a history of
    many sessions looks (for trying listings, search and usage reports).

    Session ``i`` is :func:`generate_session` with seed ``seed * 1_000_003 + i`` and the
    working directory ``/home/user/project{i % projects}``, in that directory's folder
    (``_places.session_dir_for_cwd``: ``--home-user-projectK--``) under the name Pi gives
    it (``_places.session_file_name`` of its header's time and id). Sizes spread
    log-uniformly over a 600-fold range and add up to about ``total_bytes``. The same
    arguments give the same files.

    Args:
        root: the sessions root (created if missing).
        sessions: how many sessions (at least 1).
        total_bytes: their size together, about (at least 1 KB a session).
        projects: how many project folders they are spread over (at least 1).
        seed: selects the sessions.
        on_progress: called ``(sessions written, sessions)`` after each.

    Returns:
        Each session's :class:`GenerateStats`, in order.

    Raises:
        ValueError: a count or size out of range.
        FileExistsError: a session's file exists (nothing is ever replaced).
        OSError: a file cannot be written.
    """
    from ._places import session_dir_for_cwd, session_file_name

    if sessions < 1 or projects < 1:
        raise ValueError("sessions and projects must be at least 1")
    if total_bytes < 1000 * sessions:
        raise ValueError("total_bytes must be at least 1 KB a session")
    rng = random.Random(seed)
    weights = [600 ** rng.random() for _ in range(sessions)]
    scale = total_bytes / sum(weights)
    out = []
    for i, w in enumerate(weights):
        cwd = f"/home/user/project{i % projects}"
        folder = session_dir_for_cwd(cwd, os.fspath(root))
        os.makedirs(folder, exist_ok=True)
        session_rng = random.Random(seed * 1_000_003 + i)
        start = _start(session_rng)
        final = os.path.join(folder, session_file_name(_Writer.iso(start[0]), start[1]))
        stats = GenerateStats(path=final)
        t0 = time.perf_counter()
        # Written under a temporary name (never *.jsonl: a listing passes it over) and
        # linked into place without replacing anything.
        _write_session(final, session_rng, start, stats, max(1000, int(w * scale)), None, cwd, 1.0, None, False)
        stats.seconds = time.perf_counter() - t0
        stats.path = final
        out.append(stats)
        if on_progress is not None:
            on_progress(i + 1, sessions)
    return out

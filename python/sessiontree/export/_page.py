"""The HTML export's stylesheet and script (inline; the page's CSP allows exactly these
two by their SHA-256 hashes, and nothing else: no network, no other script or style).

The script never builds markup from data: it moves the exported ``<article>`` elements,
sets classes, and writes text with ``textContent``.
"""

from __future__ import annotations

import base64
import hashlib

__all__ = ["CSS", "JS", "csp"]

CSS = """
:root{--bg:#fff;--fg:#1d1f23;--dim:#6b7280;--line:#e5e7eb;--side:#f7f7f8;--on:#0f766e;--sel:#dbeafe;
--user:#15803d;--assistant:#0e7490;--tool:#a16207;--summary:#9333ea;--compaction:#b91c1c;--err:#b91c1c}
@media (prefers-color-scheme:dark){:root{--bg:#16181d;--fg:#e5e7eb;--dim:#9ca3af;--line:#2d3139;--side:#1d2026;
--on:#5eead4;--sel:#1e3a5f;--user:#4ade80;--assistant:#67e8f9;--tool:#facc15;--summary:#d8b4fe;--compaction:#fca5a5;--err:#fca5a5}}
*{box-sizing:border-box}
html,body{margin:0;height:100%}
body{font:15px/1.5 system-ui,-apple-system,"Segoe UI",sans-serif;color:var(--fg);background:var(--bg);
display:grid;grid-template-columns:minmax(18rem,32%) 1fr;grid-template-rows:auto 1fr}
body>header{grid-column:1/3;padding:.5rem 1rem;border-bottom:1px solid var(--line)}
body>header h1{font-size:1.1rem;margin:0}
body>header p{margin:.15rem 0 0;color:var(--dim);font-size:.85rem}
#tree{overflow:auto;background:var(--side);border-right:1px solid var(--line);padding:.5rem 0;
font:12px/1.45 ui-monospace,"SF Mono",Menlo,Consolas,monospace;white-space:nowrap}
#tree .hint{padding:0 .6rem .4rem;color:var(--dim);white-space:normal;font-family:system-ui,sans-serif}
#tree a.r{display:block;color:inherit;text-decoration:none;padding:0 .6rem}
#tree a.r:hover{background:var(--line)}
#tree a.r.on{font-weight:600}
#tree a.r.on .px{color:var(--on)}
#tree a.r.sel{background:var(--sel)}
#tree a.r.cur{outline:2px solid var(--on);outline-offset:-2px}
#tree .px{color:var(--dim);white-space:pre}
#tree .pv{color:var(--dim)}
#tree .mk{color:var(--on);font-weight:700}
#tree .lb{color:var(--summary)}
#tree details>summary{list-style:none;cursor:pointer}
#tree details>summary::-webkit-details-marker{display:none}
#tree details.br>summary .tg::before{content:"▾ ";color:var(--dim)}
#tree details.br:not([open])>summary .tg::before{content:"▸ ";color:var(--on)}
#tree details.fold>summary{padding:0 .6rem;color:var(--dim);font-style:italic}
#tree details.fold[open]>summary{display:none}
.k{font-weight:600}
.k-user{color:var(--user)}.k-assistant{color:var(--assistant)}
.k-toolResult,.k-bashExecution{color:var(--tool)}
.k-compaction,.k-compactionSummary{color:var(--compaction)}
.k-branch_summary,.k-branchSummary{color:var(--summary)}
#conv{overflow:auto;padding:1rem 1.5rem 4rem}
#conv>p.note{color:var(--dim)}
article{display:none;border-left:3px solid var(--line);margin:0 0 1rem;padding:.25rem 0 .25rem .9rem;
unicode-bidi:isolate;overflow-wrap:anywhere}
article.shown{display:block}
article.cur{border-left-color:var(--on)}
body.dp article.out{opacity:.6}
body:not(.dp) .outnote{display:none}
article.m-user{border-left-color:var(--user)}
article.m-compaction,article.m-branch_summary{border-left-color:var(--summary);background:var(--side)}
article>header{font-size:.85rem;color:var(--dim);display:flex;flex-wrap:wrap;gap:.2rem .8rem;align-items:baseline}
article>header .lb{color:var(--summary);font-weight:600}
article>header a.eid{color:var(--dim);font-family:ui-monospace,monospace;margin-left:auto}
article .note{color:var(--dim);font-style:italic;margin:.3rem 0}
article .outnote{color:var(--dim);font-size:.8rem;margin:.2rem 0}
.md>:first-child{margin-top:.3rem}.md>:last-child{margin-bottom:.3rem}
.md table{border-collapse:collapse}.md td,.md th{border:1px solid var(--line);padding:.2rem .5rem}
.md blockquote{margin:.5rem 0;padding-left:.8rem;border-left:3px solid var(--line);color:var(--dim)}
.thinking{color:var(--dim);font-style:italic;border-left:2px dotted var(--line);padding-left:.6rem}
pre{background:var(--side);border:1px solid var(--line);border-radius:4px;padding:.5rem .7rem;overflow:auto;
max-height:40rem;font:12.5px/1.4 ui-monospace,"SF Mono",Menlo,Consolas,monospace;white-space:pre-wrap}
code{font-family:ui-monospace,"SF Mono",Menlo,Consolas,monospace;font-size:.92em}
details.tc,details.tr,details.js{margin:.3rem 0}
details.tc>summary,details.tr>summary,details.js>summary{cursor:pointer;font:12.5px ui-monospace,monospace}
details.tc>summary{color:var(--assistant)}
details.tr>summary{color:var(--tool)}
details.err>summary,.err{color:var(--err)}
img.im{max-width:100%;max-height:30rem;display:block;margin:.4rem 0;border:1px solid var(--line)}
.missing{color:var(--dim);font-style:italic;border-left-style:dashed}
"""

JS = """
"use strict";
(function () {
  var data = JSON.parse(document.getElementById("st-data").textContent);
  var conv = document.getElementById("conv");
  var tree = document.getElementById("tree");
  var marked = [];
  function row(n) { return document.getElementById("t" + n); }
  function branchOf(n) {
    var up = [];
    for (var i = n; i >= 0; i = data.parents[i]) { up.push(i); }
    up.reverse();
    for (var j = data.down[n]; j >= 0; j = data.down[j]) { up.push(j); }
    return up;
  }
  function missing(run, tip) {
    // One note for a run of entries this file does not hold (a "path" export).
    var a = document.createElement("article");
    a.className = "missing shown";
    a.dataset.n = String(run[0]);
    var p = document.createElement("p");
    p.textContent = (run.length === 1 ? "1 entry" : run.length + " entries") + " of this branch (" +
      data.ids[run[0]] + (run.length > 1 ? " … " + data.ids[run[run.length - 1]] : "") +
      ") are not in this file, which holds only the chosen path of a large session. To read this branch: " +
      "sessiontree export " + data.file + " --format html --leaf " + data.ids[tip];
    a.appendChild(p);
    return a;
  }
  function header(path) {
    // The header describes the branch shown, worded as html._leaf_fact words it.
    var tip = path[path.length - 1], lead = data.sessionLeaf;
    var hp = document.getElementById("h-path"), hl = document.getElementById("h-leaf");
    if (hp) { hp.textContent = path.length.toLocaleString("en-US") + " on the path shown"; }
    if (hl) {
      hl.textContent = "to " + data.ids[tip] + (tip === lead || lead < 0 ? " (the session's current leaf)" :
        ", a branch (the session's current leaf is " + data.ids[lead] + ")");
    }
  }
  function show(n, scroll) {
    var path = branchOf(n);
    var i, a, r;
    for (i = 0; i < marked.length; i++) { marked[i].classList.remove("shown", "cur", "sel"); }
    marked = [];
    var shown = conv.querySelectorAll("article.shown");
    for (i = 0; i < shown.length; i++) { shown[i].classList.remove("shown", "cur"); }
    var notes = conv.querySelectorAll("article.missing");
    for (i = 0; i < notes.length; i++) { notes[i].remove(); }
    var run = [];
    for (i = 0; i <= path.length; i++) {
      a = i < path.length ? document.getElementById("a" + path[i]) : null;
      if (i < path.length && !a) { run.push(path[i]); continue; }
      if (run.length) { conv.appendChild(missing(run, path[path.length - 1])); run = []; }
      if (i === path.length) { break; }
      a.classList.add("shown");
      if (path[i] === n) { a.classList.add("cur"); }
      conv.appendChild(a);
    }
    for (i = 0; i < path.length; i++) {
      r = row(path[i]);
      if (r) { r.classList.add("sel"); marked.push(r); }
    }
    document.body.classList.toggle("dp", path[path.length - 1] === data.leaf);
    header(path);
    r = row(n);
    if (r) {
      r.classList.add("cur");
      for (var d = r.parentElement; d && d !== tree; d = d.parentElement) {
        if (d.tagName === "DETAILS") { d.open = true; }
      }
    }
    if (scroll) {
      a = document.getElementById("a" + n) || conv.querySelector("article.missing");
      if (a) { a.scrollIntoView({block: "start"}); }
      if (r) { r.scrollIntoView({block: "nearest"}); }
    }
  }
  tree.addEventListener("click", function (ev) {
    var t = ev.target;
    var a = t && t.closest ? t.closest("a.r") : null;
    if (!a) { return; }
    ev.preventDefault();
    var n = Number(a.dataset.n);
    show(n, true);
    history.replaceState(null, "", "#a" + n);
  });
  var m = /^#a(\\d+)$/.exec(location.hash);
  var start = m ? Number(m[1]) : data.leaf;
  if (start >= 0 && start < data.ids.length) { show(start, !!m); }
  document.body.dataset.ready = "1";
})();
"""


def _hash(text: str) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode()).digest()).decode() + "'"


def csp() -> str:
    """The page's Content-Security-Policy: nothing but the inline style and script above
    (by hash) and ``data:`` images."""
    return (f"default-src 'none'; style-src {_hash(CSS)}; script-src {_hash(JS)}; img-src data:; "
            "base-uri 'none'; form-action 'none'")

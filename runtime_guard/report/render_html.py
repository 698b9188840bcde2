"""Self-contained report.html: the merged stack tree as an SVG picture, a per-process table and a
drill-down (click a process: its stacks per snapshot and its last dispatch, field by field).

Everything is inline (CSS, JS, SVG, the report's JSON); nothing is fetched, so the file can be
mailed or opened on an air-gapped machine. The tree layout is computed here, in Python, so the
picture is there even with JavaScript off; the script only adds selection and the drill-down.
All report text reaches the page escaped (SVG/HTML) or through textContent (JS).
"""

from __future__ import annotations

import base64
import hashlib
import html
import json
from dataclasses import dataclass, field
from typing import Any

from runtime_guard.report.model import Report
from runtime_guard.report.render_text import short_name
from runtime_guard.report.view import build_view

CHAR_W = 7.6  # px per character of the 12px monospace font (layout estimate, bold included)
LINE_H = 15
PAD = 8
HGAP = 22
VGAP = 40  # room for the process-set label on each edge
MAX_CHARS = 46


@dataclass
class _Box:
    lines: list[str]
    procs: list[int]
    label: str
    kind: str  # user, library, end, root
    outlier: bool
    title: str
    category: str = ""
    children: list["_Box"] = field(default_factory=list)
    x: float = 0.0
    y: float = 0.0
    sub_w: float = 0.0

    @property
    def w(self) -> float:
        return max(len(s) for s in self.lines) * CHAR_W + 2 * PAD

    @property
    def h(self) -> float:
        return len(self.lines) * LINE_H + PAD


def _cut(s: str, n: int = MAX_CHARS) -> str:
    return s if len(s) <= n else s[: n - 1] + "\u2026"


def _box(n: dict[str, Any]) -> _Box:
    where = f"{n.get('short_file') or n['file']}:{n['line']}"
    lines = [_cut(short_name(n["name"])), _cut(where, MAX_CHARS)]
    title = f"{n['name']} ({n['file']}:{n['line']})"
    inner = n.get("inner")
    if n["kind"] == "library" and inner:
        more = f"+{n['hidden']} frames \u2192 " if n.get("hidden") else "\u2192 "
        lines.append(_cut(f"{more}{short_name(inner['name'])}:{inner['line']}"))
        title += f"\n  ... {n.get('hidden', 0)} more ...\n{inner['name']} ({inner['file']}:{inner['line']})"
    b = _Box(lines, n["processes"], n["label"], n["kind"], bool(n.get("outlier")), title)
    for e in n.get("ends") or []:
        what = e["blocked_on"] or "stack ends here"
        b.children.append(_Box([_cut("waits: " + what, 64)], e["processes"], e["label"], "end",
                               bool(n.get("outlier")) or bool(e.get("outlier")), f"waiting on: {what}", e.get("category", "")))
    for c in n["children"]:
        b.children.append(_box(c))
    return b


def _layout(b: _Box, x0: float, y: float) -> None:
    kids_w = sum(_measure(c) for c in b.children) + HGAP * max(0, len(b.children) - 1)
    b.sub_w = max(b.w, kids_w)
    b.x = x0 + b.sub_w / 2
    b.y = y
    cx = x0 + (b.sub_w - kids_w) / 2
    for c in b.children:
        _layout(c, cx, y + b.h + VGAP)
        cx += c.sub_w + HGAP


def _measure(b: _Box) -> float:
    kids_w = sum(_measure(c) for c in b.children) + HGAP * max(0, len(b.children) - 1)
    b.sub_w = max(b.w, kids_w)
    return b.sub_w


def _extent(b: _Box) -> tuple[float, float]:
    w, h = b.x + b.w / 2, b.y + b.h
    for c in b.children:
        cw, ch = _extent(c)
        w, h = max(w, cw), max(h, ch)
    return w, h


def tree_svg(tree: dict[str, Any], title: str) -> str:
    root_n = tree["root"]
    root = _Box([_cut(title), f"processes {root_n['label']}"], root_n["processes"], root_n["label"], "root", False, title)
    root.children = [_box(c) for c in root_n["children"]]
    _layout(root, 10, 10)
    w, h = _extent(root)
    out = [f'<svg class="tree" xmlns="http://www.w3.org/2000/svg" width="{w + 10:.0f}" height="{h + 10:.0f}" '
           f'viewBox="0 0 {w + 10:.0f} {h + 10:.0f}" role="img" aria-label="{html.escape(title)}">']
    edges: list[str] = []
    nodes: list[str] = []
    _draw(root, None, edges, nodes)
    out.extend(edges)
    out.extend(nodes)
    out.append("</svg>")
    return "\n".join(out)


def _cls(b: _Box) -> str:
    parts = ["node", b.kind]
    if b.outlier:
        parts.append("outlier")
    if b.kind == "end":
        parts.append("peer" if b.category in ("collective", "barrier", "kv-store") else "self")
    return " ".join(parts)


def _draw(b: _Box, parent: _Box | None, edges: list[str], nodes: list[str]) -> None:
    procs = ",".join(map(str, b.procs))
    if parent is not None:
        x1, y1 = parent.x, parent.y + parent.h
        x2, y2 = b.x, b.y
        ym = (y1 + y2) / 2
        ecls = "edge outlier" if b.outlier else "edge"
        edges.append(f'<path class="{ecls}" d="M{x1:.1f},{y1:.1f} C{x1:.1f},{ym:.1f} {x2:.1f},{ym:.1f} {x2:.1f},{y2:.1f}"/>')
        lw = len(b.label) * CHAR_W + 12
        edges.append(f'<g class="edge-label{" outlier" if b.outlier else ""}" data-procs="{procs}">'
                     f'<rect x="{x2 - lw / 2:.1f}" y="{y2 - 19:.1f}" width="{lw:.1f}" height="15" rx="7"/>'
                     f'<text x="{x2:.1f}" y="{y2 - 8:.1f}" text-anchor="middle">{html.escape(b.label)}</text></g>')
    left, top = b.x - b.w / 2, b.y
    g = [f'<g class="{_cls(b)}" data-procs="{procs}" tabindex="0"><title>{html.escape(b.title)}\nprocesses: {html.escape(b.label)}</title>',
         f'<rect x="{left:.1f}" y="{top:.1f}" width="{b.w:.1f}" height="{b.h:.1f}" rx="{12 if b.kind == "end" else 5}"/>']
    for i, line in enumerate(b.lines):
        cls = "l0" if i == 0 else "l1"
        g.append(f'<text class="{cls}" x="{left + PAD:.1f}" y="{top + PAD / 2 + LINE_H * (i + 1) - 3:.1f}">{html.escape(line)}</text>')
    g.append("</g>")
    nodes.append("".join(g))
    for c in b.children:
        _draw(c, b, edges, nodes)


_CSS = """
body{font:14px/1.4 system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:0;color:#212529;background:#f8f9fa}
header{padding:14px 20px;background:#fff;border-bottom:1px solid #dee2e6}
h1{font-size:18px;margin:0 0 6px} h2{font-size:15px;margin:18px 0 8px}
.kind{display:inline-block;padding:2px 8px;border-radius:10px;color:#fff;font-size:12px;margin-right:8px;vertical-align:2px}
.kind.hang{background:#9c36b5}.kind.snapshot{background:#1098ad}.kind.divergence,.kind.missing,.kind.died{background:#c92a2a}.kind.exited{background:#e67700}
.summary{font-size:15px} .facts{font-weight:600;margin-top:4px} main{padding:0 20px 30px} .notes{color:#495057;font-size:13px;margin:6px 0 0;padding-left:18px}
.treebox{overflow:auto;background:#fff;border:1px solid #dee2e6;border-radius:6px;padding:6px;max-height:70vh}
svg.tree text{font:12px ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;fill:#212529}
svg.tree .l0{font-weight:600}
svg.tree .node rect{fill:#e7f5ff;stroke:#1c7ed6;stroke-width:1.2}
svg.tree .node.library rect{fill:#f1f3f5;stroke:#adb5bd} svg.tree .node.library text{fill:#495057}
svg.tree .node.root rect{fill:#fff;stroke:#495057}
svg.tree .node.end rect{fill:#edf2ff;stroke:#748ffc} svg.tree .node.end.self rect{fill:#fff4e6;stroke:#f08c00}
svg.tree .node.outlier rect{fill:#fff5f5;stroke:#e03131;stroke-width:2.2} svg.tree .node.outlier text{fill:#c92a2a}
svg.tree .edge{fill:none;stroke:#adb5bd;stroke-width:1.5} svg.tree .edge.outlier{stroke:#e03131;stroke-width:2.5}
svg.tree .edge-label rect{fill:#fff;stroke:#adb5bd} svg.tree .edge-label.outlier rect{fill:#e03131;stroke:#e03131}
svg.tree .edge-label text{font-size:11px;font-weight:600;fill:#495057} svg.tree .edge-label.outlier text{fill:#fff}
svg.tree .node{cursor:pointer} svg.tree .node.sel rect{filter:drop-shadow(0 0 4px #f59f00);stroke-dasharray:6 2}
table.procs{border-collapse:collapse;background:#fff;width:100%;font-size:13px}
table.procs th,table.procs td{border:1px solid #dee2e6;padding:4px 8px;text-align:left;vertical-align:top}
table.procs tr.proc{cursor:pointer} table.procs tr.proc:hover{background:#f1f3f5}
table.procs tr.outlier td:first-child{border-left:4px solid #e03131;font-weight:700;color:#c92a2a}
table.procs tr.sel{background:#fff9db} code,pre{font:12px ui-monospace,SFMono-Regular,Menlo,Consolas,monospace}
.src{color:#868e96} #detail{background:#fff;border:1px solid #dee2e6;border-radius:6px;padding:10px 14px;margin-top:12px}
.frame{white-space:pre-wrap;word-break:break-all;font:12px ui-monospace,monospace} .frame.lib{color:#868e96} .frame.native{color:#adb5bd;font-style:italic}
.frame.user{color:#1864ab;font-weight:600} .snap{margin:8px 0 12px;border-left:3px solid #dee2e6;padding-left:10px}
.snaphead{font-weight:600} .note{color:#e67700} table.fields td{padding:1px 10px 1px 0;font:12px ui-monospace,monospace}
table.fields tr.diff td{color:#c92a2a;font-weight:700}
"""

_JS = r"""
(function(){
  const R = JSON.parse(document.getElementById('report-data').textContent);
  const byIdx = {}; R.processes.forEach(p => byIdx[p.process_index] = p);
  const diff = new Set(R.differing_fields || []);
  const el = (tag, cls, text) => { const e = document.createElement(tag); if (cls) e.className = cls; if (text !== undefined) e.textContent = text; return e; };
  const libRe = /\/(site-packages|dist-packages|jaxlib|runtime_guard)\/|\/jax\/(_src|experimental)\/|\/lib\/python3\.\d+\/|^<frozen /;
  function select(procs) {
    document.querySelectorAll('svg.tree .node:not(.root)').forEach(n => {
      const ps = n.dataset.procs.split(',');
      n.classList.toggle('sel', procs.length > 0 && procs.every(p => ps.includes(String(p))));
    });
    document.querySelectorAll('tr.proc').forEach(r => r.classList.toggle('sel', procs.includes(+r.dataset.proc)));
  }
  function show(idx) {
    const p = byIdx[idx]; const d = document.getElementById('detail'); d.textContent = '';
    if (!p) return;
    d.appendChild(el('h2', '', 'process ' + p.process_index + ' [' + p.status + ']' + (p.pid ? ' pid ' + p.pid : '') + (p.host ? ' on ' + p.host : '')));
    if (p.location) {
      const w = el('div'); w.appendChild(el('span', '', 'at ' + p.location.file + ':' + p.location.line + (p.location.function ? ' in ' + p.location.function : '')));
      if (p.location.source) { w.appendChild(el('br')); w.appendChild(el('code', 'src', p.location.source)); }
      d.appendChild(w);
    }
    if (p.blocked_on || p.progress) d.appendChild(el('div', '', (p.blocked_on ? 'waiting on: ' + p.blocked_on : 'stack ends in the program') + (p.progress ? ' (' + p.progress + ' across snapshots)' : '')));
    if (p.note) d.appendChild(el('div', 'note', 'note: ' + p.note));
    if (p.dispatch) {
      const ds = p.dispatch;
      d.appendChild(el('h2', '', 'dispatch #' + ds.seq + ': ' + ds.name + (ds.location ? ' called at ' + ds.location.file + ':' + ds.location.line : '')));
      const t = el('table', 'fields');
      Object.entries(ds.fields || {}).forEach(([k, v]) => { const r = el('tr', diff.has(k) ? 'diff' : ''); r.appendChild(el('td', '', (diff.has(k) ? '* ' : '') + k)); r.appendChild(el('td', '', String(v))); t.appendChild(r); });
      d.appendChild(t);
    } else if (p.last_seq) d.appendChild(el('div', '', 'last dispatch #' + p.last_seq));
    const snaps = p.snapshots || [];
    d.appendChild(el('h2', '', snaps.length ? 'stacks (' + snaps.length + ' snapshot' + (snaps.length > 1 ? 's' : '') + ', innermost frame first)' : 'no stacks'));
    const t0 = snaps.length ? snaps[0].taken_at : 0;
    snaps.forEach((s, k) => {
      const box = el('div', 'snap');
      box.appendChild(el('div', 'snaphead', 'snapshot ' + (k + 1) + ' (+' + (s.taken_at - t0).toFixed(1) + ' s) by ' + s.method));
      if (s.note) box.appendChild(el('div', 'note', s.note));
      [...s.threads].sort((a, b) => (b.is_main ? 1 : 0) - (a.is_main ? 1 : 0)).forEach(t => {
        box.appendChild(el('div', '', 'thread ' + t.name + (t.is_main ? ' [main]' : '') + (t.active ? '' : ' (idle)')));
        t.frames.forEach(f => {
          const cls = f.native ? 'native' : (libRe.test(f.file) ? 'lib' : 'user');
          box.appendChild(el('div', 'frame ' + cls, '    ' + f.name + (f.native ? '  [' + f.file.split('/').pop() + ']' : '  (' + f.file + ':' + f.line + ')')));
          Object.entries(f.locals || {}).forEach(([k2, v]) => box.appendChild(el('div', 'frame lib', '        ' + k2 + ' = ' + v)));
        });
      });
      d.appendChild(box);
    });
    select([p.process_index]);
  }
  document.querySelectorAll('tr.proc').forEach(r => r.addEventListener('click', () => show(+r.dataset.proc)));
  document.querySelectorAll('svg.tree .node, svg.tree .edge-label').forEach(n => n.addEventListener('click', () => {
    const ps = n.dataset.procs.split(',').filter(x => x !== '').map(Number);
    select(ps); if (ps.length === 1) show(ps[0]);
  }));
  const first = ((R.merged_stacks || {}).outliers || [])[0];
  show(first !== undefined ? first : (R.processes[0] || {}).process_index);
  document.body.dataset.ready = '1';
})();
"""


def render_html(report: Report) -> str:
    view = build_view(report)
    d = report.to_dict()
    data = json.dumps(d, default=str).replace("</", "<\\/").replace("<!--", "<\\!--")
    merged = report.merged_stacks or {}
    e = html.escape
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        # No network, and no script or style but the page's own: each inline block is allowed by
        # its hash (the JSON data block is not script: it is never executed).
        f'<meta http-equiv="Content-Security-Policy" content="default-src \'none\'; '
        f"style-src '{_sha256(_CSS)}'; script-src '{_sha256(_JS)}'; img-src data:\">",
        f"<title>mcjax-guard {e(report.kind)} report</title><style>{_CSS}</style></head><body>",
        f'<header><h1><span class="kind {e(report.kind)}">{e(report.kind.upper())}</span>mcjax-guard report'
        + (f" \u2014 job {e(report.job_id)}" if report.job_id else "") + "</h1>",
        f'<div class="summary" id="summary">{e(report.summary)}</div>',
    ]
    if view.facts:
        parts.append(f'<div class="facts">{e("; ".join(view.facts))}</div>')
    if report.notes or view.stacks:
        parts.append('<ul class="notes">' + "".join(f"<li>{e(n)}</li>" for n in [*view.notes, view.stacks] if n) + "</ul>")
    parts.append("</header><main>")
    trees = merged.get("trees") or []
    if trees:
        parts.append("<h2>Merged stacks <small>(each branch labelled with the processes that took it; "
                     "red: the odd processes; click a node or a process)</small></h2>")
        for tr in trees:
            title = "main thread" if tr["thread"] == "MainThread" else f"thread {tr['thread']}"
            parts.append(f'<div class="treebox">{tree_svg(tr, title)}</div>')
    parts.append("<h2>Processes</h2>")
    parts.append('<table class="procs"><tr><th>process</th><th>status</th><th>dispatch</th><th>called at</th>'
                 "<th>now at</th><th>waiting on / note</th><th>stacks by</th></tr>")
    by_index = {p.process_index: p for p in report.processes}
    for r in view.rows:
        p = by_index[r.process]
        cls = "proc outlier" if r.odd else "proc"
        now = f"<code>{e(r.now_at)}</code>" if r.now_at else ""
        called = f"<code>{e(r.called_at)}</code>"
        if r.source:  # under the place it is the line of
            src = f'<br><code class="src">{e(r.source)}</code>'
            now, called = (now + src, called) if r.now_at else (now, called + src)
        methods = e(", ".join(dict.fromkeys(s.method for s in p.snapshots)))
        parts.append(f'<tr class="{cls}" data-proc="{r.process}"><td>{r.process}</td><td>{e(r.status)}</td>'
                     f"<td>{e(r.dispatch)}</td><td>{called}</td><td>{now}</td>"
                     f"<td>{e(r.waiting or r.note)}</td><td>{methods}</td></tr>")
    parts.append("</table>")
    parts.append('<div id="detail"><noscript>Enable JavaScript for the per-process stacks (they are also in report.txt).</noscript></div>')
    parts.append(f'</main><script type="application/json" id="report-data">{data}</script>')
    parts.append(f"<script>{_JS}</script></body></html>")
    return "\n".join(parts)


def _sha256(text: str) -> str:
    """A CSP source expression allowing exactly this inline block."""
    return "sha256-" + base64.b64encode(hashlib.sha256(text.encode("utf-8")).digest()).decode("ascii")

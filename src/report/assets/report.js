// report.js - `atr report`'s interactions: the trace explorer (filter,
// column sort, pages of 200 rows) and a trace's step timeline in SVG.
// The tables are already in the HTML; this only reads the embedded data
// (#data) and writes text with textContent, never markup from the data.
// Each section's file (report-*.js) pushes its set-up function here;
// start.js runs them in order once every file is loaded.
const SECTIONS = [];
const PAGE = 200;
// The SVG namespace, taken from parsed markup so the file names no URL.
const SVG = (() => { const d = document.createElement("div"); d.innerHTML = "<svg></svg>"; return d.firstChild.namespaceURI; })();
const data = JSON.parse(document.getElementById("data").textContent);
const traces = data.traces || [];

// The step timelines: deflated JSON {labels, tl} in base64 (html-timelines.c),
// inflated by the browser's own DecompressionStream the first time a
// timeline opens, so the page's load pays nothing for them.
let timelines = null;
function loadTimelines() {
  if (!timelines) {
    const b64 = document.getElementById("timelines")?.textContent ?? "";
    const bytes = Uint8Array.from(atob(b64), c => c.charCodeAt(0));
    const stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream("deflate"));
    timelines = new Response(stream).json();
  }
  return timelines;
}

// Trace i's flat, gap-coded step list (see timeline_json in html.c) as
// [kind, start ms, duration ms, a, b, agent]: llm a, b = tokens in, out;
// tool a = its label; agent: the sub-agent's name, "" for the main agent
// (kinds 2 and 3 are llm and tool steps with the agent's label last).
function steps(all, i) {
  const f = all.tl[i] || [], labels = all.labels, out = [];
  let at = 0;
  for (let i = 0; i < f.length;) {
    const kind = f[i] & 1, sub = f[i] >= 2, start = at + f[i + 1], dur = f[i + 2];
    at = start + dur;
    if (kind === 0) { out.push([0, start, dur, f[i + 3], f[i + 4]]); i += 5; }
    else { out.push([1, start, dur, labels[f[i + 3]] ?? "", 0]); i += 4; }
    out[out.length - 1].push(sub ? labels[f[i++]] ?? "" : "");
  }
  return out;
}

// The table's columns: the data key of each, and whether it is a number.
const COLUMNS = [
  ["i", true], ["file", false], ["src", false], ["id", false], ["steps", true],
  ["llm", true], ["tool", true], ["in", true], ["out", true], ["dur", true], ["reuse", true],
];

function fmt(key, t, i) {
  const v = key === "i" ? i + 1 : t[key];
  if (v === null || v === undefined) return "n/a";
  if (key === "dur") return (v / 1000).toFixed(1);
  if (key === "reuse") return (v * 100).toFixed(1);
  return String(v);
}

function el(name, attrs, text) {
  const e = name.startsWith("svg:") ? document.createElementNS(SVG, name.slice(4))
                                    : document.createElement(name);
  for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, v);
  if (text !== undefined) e.textContent = text;
  return e;
}

const state = { filter: "", sortKey: "i", desc: false, page: 0, rows: [] };

function compute() {
  const f = state.filter.toLowerCase();
  let rows = traces.map((t, i) => i);
  if (f) rows = rows.filter(i => [traces[i].file, traces[i].src, traces[i].id]
    .some(s => (s || "").toLowerCase().includes(f)));
  const k = state.sortKey, num = COLUMNS.find(c => c[0] === k)[1];
  const val = i => (k === "i" ? i : traces[i][k]);
  rows.sort((a, b) => {
    const x = val(a), y = val(b);
    let c = num ? (x ?? -Infinity) - (y ?? -Infinity) : String(x ?? "").localeCompare(String(y ?? ""));
    if (c === 0) c = a - b;
    return state.desc ? -c : c;
  });
  state.rows = rows;
}

function render(tbody, info) {
  const pages = Math.max(1, Math.ceil(state.rows.length / PAGE));
  state.page = Math.min(state.page, pages - 1);
  const from = state.page * PAGE, part = state.rows.slice(from, from + PAGE);
  const frag = document.createDocumentFragment();
  for (const i of part) {
    const tr = el("tr", { "data-i": String(i) });
    for (const [k, num] of COLUMNS) tr.appendChild(el("td", num ? { class: "n" } : {}, fmt(k, traces[i], i)));
    frag.appendChild(tr);
  }
  tbody.replaceChildren(frag);
  info.textContent = state.rows.length
    ? `rows ${from + 1}-${from + part.length} of ${state.rows.length} (page ${state.page + 1} of ${pages})`
    : "no trace matches";
}

async function timeline(i) {
  const t = traces[i], box = document.getElementById("timeline");
  box.replaceChildren(el("p", { class: "muted" }, "reading the timelines..."));
  let all;
  try {
    all = steps(await loadTimelines(), i);
  } catch (e) {
    box.replaceChildren(el("p", {}, `The timelines cannot be read: ${e}`));
    return;
  }
  box.replaceChildren();
  box.appendChild(el("h3", {}, `Timeline of ${t.id ?? "(no id)"} (${t.steps} steps)`));
  const end = all.reduce((m, s) => Math.max(m, s[1] + s[2]), 1);
  // one llm and one tool row per agent, the main agent first: a DAG's
  // parallel sub-agents side by side
  const lanes = [""];
  for (const s of all) if (!lanes.includes(s[5])) lanes.push(s[5]);
  const rows = lanes.length * 2;
  const W = 1000, L = 60, R = 20, rowH = 22, top = 10, H = top + rowH * rows + 44;
  const x = ms => L + (W - L - R) * ms / end;
  const svg = el("svg:svg", { class: "timeline", viewBox: `0 0 ${W} ${H}`, role: "img",
                              "aria-label": "steps on one time axis" });
  lanes.forEach((agent, k) => ["llm", "tool"].forEach((name, r) =>
    svg.appendChild(el("svg:text", { x: 4, y: top + rowH * (2 * k + r) + 15 },
                       agent ? `${agent.slice(0, 6)} ${name}` : name))));
  for (let k = 0; k <= 5; k++) {
    const ms = end * k / 5, xx = x(ms);
    svg.appendChild(el("svg:line", { class: "grid", x1: xx, x2: xx, y1: top, y2: top + rowH * rows }));
    svg.appendChild(el("svg:text", { x: xx, y: top + rowH * rows + 14, "text-anchor": "middle" },
                       (ms / 1000).toFixed(ms < 10000 ? 2 : 0)));
  }
  svg.appendChild(el("svg:text", { class: "axis", x: (L + W - R) / 2, y: H - 6, "text-anchor": "middle" },
                     "time since the trace's first step (s)"));
  for (const [kind, start, dur, a, b, agent] of all) {
    const label = (agent ? `${agent}: ` : "") + (kind ? a : `llm ${a} in, ${b} out`);
    const row = 2 * lanes.indexOf(agent) + kind;
    const rect = el("svg:rect", { class: kind ? "tool" : "llm", x: x(start), y: top + rowH * row + 3,
                                  width: Math.max(1.5, x(start + dur) - x(start)), height: rowH - 6 });
    rect.appendChild(el("svg:title", {}, `${label} | start ${(start / 1000).toFixed(3)} s, ${dur} ms`));
    svg.appendChild(rect);
  }
  box.appendChild(svg);
  box.appendChild(el("p", { class: "muted" },
    "Blue: llm calls; orange: tool calls; a sub-agent has rows of its own. Hover a bar for its step; steps without a recorded time follow the previous one."));
  box.scrollIntoView({ block: "nearest" });
}

function explorer() {
  const table = document.getElementById("trace-table");
  if (!table) return;
  const tbody = table.tBodies[0], tools = document.getElementById("trace-tools");
  const input = el("input", { type: "search", placeholder: "filter by file, source or id", "aria-label": "filter traces" });
  const prev = el("button", { type: "button" }, "previous"), next = el("button", { type: "button" }, "next");
  const info = el("span", { class: "muted" });
  tools.append(input, prev, next, info);
  const update = () => { compute(); render(tbody, info); };
  input.addEventListener("input", () => { state.filter = input.value; state.page = 0; update(); });
  prev.addEventListener("click", () => { if (state.page > 0) { state.page--; render(tbody, info); } });
  next.addEventListener("click", () => {
    if ((state.page + 1) * PAGE < state.rows.length) { state.page++; render(tbody, info); }
  });
  [...table.tHead.rows[0].cells].forEach((th, c) => {
    th.classList.add("sortable");
    th.addEventListener("click", () => {
      const k = COLUMNS[c][0];
      state.desc = state.sortKey === k ? !state.desc : false;
      state.sortKey = k;
      for (const o of table.tHead.rows[0].cells) o.removeAttribute("aria-sort");
      th.setAttribute("aria-sort", state.desc ? "descending" : "ascending");
      update();
    });
  });
  tbody.addEventListener("click", e => {
    const tr = e.target.closest("tr");
    if (!tr) return;
    for (const o of tbody.querySelectorAll("tr.sel")) o.classList.remove("sel");
    tr.classList.add("sel");
    timeline(Number(tr.dataset.i));
  });
  update();
  // Inflate the timelines once the page is idle, so the first click is quick.
  (window.requestIdleCallback || setTimeout)(() => loadTimelines().catch(() => {}));
}

SECTIONS.push(explorer);

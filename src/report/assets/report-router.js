// report-router.js - the Router lab: the learned router's forward pass,
// operation for operation as atr_router_model_decide (src/policy/
// learned-model.c) with util/rng.c's portable log and exp, so its picks
// and scores equal `atr router decide` to the bit. Live on features set
// with sliders, and per llm turn of a trace picked from the report's.
const RL_LN2 = 0.693147180559945309417232121458;
const RL_SQRT_HALF = 0.707106781186547524400844362105;

// frexp for finite x > 0: [m, e] with x = m * 2^e, m in [0.5, 1). Powers
// of two scale exactly.
function rlFrexp(x) {
  let e = Math.floor(Math.log2(x)) + 1;
  let m = x * Math.pow(2, -e);
  while (m < 0.5) { m *= 2; e--; }
  while (m >= 1) { m /= 2; e++; }
  return [m, e];
}

// atr_det_log: log(m) by the atanh series, plus e ln 2.
function rlLog(x) {
  if (!(x > 0)) return -Infinity;
  let [m, e] = rlFrexp(x);
  if (m < RL_SQRT_HALF) { m *= 2; e--; }
  const s = (m - 1) / (m + 1), s2 = s * s;
  let term = s, sum = 0;
  for (let k = 1; k < 40; k += 2) { sum += term / k; term *= s2; }
  return 2 * sum + e * RL_LN2;
}

// atr_det_exp: 2^k e^r, |r| <= ln2/2, Taylor terms.
function rlExp(x) {
  if (x > 700) x = 700;
  if (x < -700) return 0;
  const k = Math.floor(x / RL_LN2 + 0.5), rr = x - k * RL_LN2;
  let term = 1, sum = 1;
  for (let n = 1; n < 24; n++) { term *= rr / n; sum += term; }
  return sum * Math.pow(2, k);
}

const rlLog1p = v => rlLog(1 + (v > 0 ? v : 0));

// The pick (argmax of the logits, lowest index on ties), the logits and
// the softmax probabilities of feature vector x.
function rlDecide(model, x) {
  let act = x.map((v, j) => (v - model.mean[j]) / model.std[j]);
  model.layers.forEach((L, l) => {
    const relu = l + 1 < model.layers.length, out = [];
    for (let o = 0; o < L.out; o++) {
      let z = L.bias[o];
      for (let i = 0; i < L.in; i++) z += L.weights[o * L.in + i] * act[i];
      out.push(relu && z < 0 ? 0 : z);
    }
    act = out;
  });
  const z = act;
  let best = 0, mx = z[0], sum = 0;
  for (let i = 1; i < z.length; i++) { if (z[i] > z[best]) best = i; if (z[i] > mx) mx = z[i]; }
  const p = z.map(v => rlExp(v - mx));
  for (const v of p) sum += v;
  return { pick: best, logits: z, probs: p.map(v => v / sum) };
}

// A turn's features as atr_router_features computes them (decide.h: sent
// on time, recorded outputs). u = [prompt, ids, shared, tool, think ms, out].
function rlTurnFeatures(turns, t, blockSize) {
  const [prompt, ids, shared, tool, thinkMs] = turns[t];
  let outSum = 0;
  for (let k = 0; k < t; k++) outSum += turns[k][5];
  const think = thinkMs / 1000;
  let reused = shared * (blockSize || 16);
  if (reused > prompt) reused = prompt;
  return [rlLog1p(prompt), rlLog1p(t), ids ? shared / ids : 0, rlLog1p(prompt - reused),
          tool === 0 ? 1 : 0, tool === 1 ? 1 : 0, tool === 2 ? 1 : 0, tool === 3 ? 1 : 0,
          rlLog1p(think), rlLog1p(t ? think : 0), rlLog1p(t ? turns[t - 1][5] : 0),
          rlLog1p(t ? outSum / t : 0)];
}

const rlPct = p => (p < 0.0001 ? "<0.01" : (100 * p).toFixed(2)) + " %";

// What a feature's value means, in the units it was logged from.
function rlHint(name, v) {
  const raw = Math.exp(v) - 1;
  if (name === "prefix_reuse") return `${(100 * v).toFixed(0)} % of blocks`;
  if (name.startsWith("tool_")) return v >= 0.5 ? "yes" : "no";
  if (name.endsWith("_s")) return `≈ ${raw.toFixed(raw < 10 ? 2 : 0)} s`;
  if (name === "log_turn") return `turn ≈ ${raw.toFixed(0)}`;
  return `≈ ${raw.toFixed(0)} tokens`;
}

// One bar per candidate: its probability, and its logit as text.
function rlBars(model, d) {
  const n = model.candidates.length, W = 640, L = 110, rowH = 26, H = rowH * n + 8;
  const svg = el("svg:svg", { class: "router-bars", viewBox: `0 0 ${W} ${H}`, role: "img",
                              "aria-label": "probability per candidate" });
  model.candidates.forEach((name, c) => {
    const y = 4 + rowH * c, w = (W - L - 170) * d.probs[c];
    const g = el("svg:g", { "data-candidate": name, "data-score": String(d.probs[c]),
                            "data-logit": String(d.logits[c]) });
    g.appendChild(el("svg:text", { x: 4, y: y + 16 }, name));
    const bar = el("svg:rect", { class: `c${c % 8}`, x: L, y: y + 3, width: Math.max(1, w), height: rowH - 8 });
    bar.appendChild(el("svg:title", {}, `${name}: p = ${d.probs[c]}, logit ${d.logits[c]}`));
    g.appendChild(bar);
    g.appendChild(el("svg:text", { x: L + Math.max(1, w) + 6, y: y + 16 },
                     `${rlPct(d.probs[c])} (logit ${d.logits[c].toFixed(3)})${c === d.pick ? " ◀ pick" : ""}`));
    svg.appendChild(g);
  });
  return svg;
}

// Sliders and number fields per feature; every change decides again.
function rlLive(box, model) {
  const names = model.features, x = model.mean.slice(), w0 = model.layers[0];
  const weighted = j => w0.weights.some((w, i) => i % w0.in === j && w !== 0);
  const toolAt = [4, 5, 6, 7].reduce((b, i) => (model.mean[i] > model.mean[b] ? i : b), 4);
  names.forEach((n, j) => {
    if (n.startsWith("tool_")) x[j] = j === toolAt ? 1 : 0;
    else x[j] = Math.round(x[j] * 100) / 100;
  });
  box.replaceChildren(el("h3", {}, "Live decision"),
    el("p", { class: "muted" }, "Features in model order; logs are log(1 + value). Exactly one tool_ feature is 1 for a real request."));
  const grid = el("div", { id: "router-features" }), out = el("div", { id: "router-out" });
  box.append(grid, out);
  const update = () => {
    const d = rlDecide(model, x);
    const pick = el("p", { id: "router-pick", "data-pick": model.candidates[d.pick] });
    pick.append("picks ", el("strong", {}, model.candidates[d.pick]));
    out.replaceChildren(pick, rlBars(model, d));
  };
  names.forEach((n, j) => {
    const tool = n.startsWith("tool_"), hi = tool || n === "prefix_reuse" ? 1
      : Math.max(1, Math.ceil(model.mean[j] + 4 * model.std[j]));
    const range = el("input", { type: "range", min: 0, max: hi, step: tool ? 1 : 0.01,
                                "aria-label": n, value: String(x[j]) });
    const num = el("input", { type: "number", step: "any", id: `router-f-${n}`,
                              "aria-label": n, value: String(x[j]) });
    const hint = el("span", { class: "muted" }, rlHint(n, x[j]));
    const set = (v, from) => {
      if (!Number.isFinite(v)) return;
      x[j] = v;
      if (from !== range) range.value = String(v);
      if (from !== num) num.value = String(v);
      hint.textContent = rlHint(n, v);
      update();
    };
    range.addEventListener("input", () => set(Number(range.value), range));
    num.addEventListener("input", () => { if (num.value !== "") set(Number(num.value), num); });
    const label = el("label", { for: `router-f-${n}` });
    label.appendChild(el("code", {}, n));
    if (!weighted(j)) {   // zero first-layer weights: changes no decision
      label.classList.add("weightless");
      label.append(" ", el("span", { class: "muted" }, "(no weight)"));
    }
    grid.append(label, range, num, hint);
  });
  update();
}

// A strip of the turns coloured by pick, then a table of each turn.
function rlTrace(box, model, rd, k) {
  const t = rd.traces[k], n = model.candidates.length;
  const rows = t.turns.map((u, i) => rlDecide(model, rlTurnFeatures(t.turns, i, rd.block_size)));
  const mismatch = rows.filter((d, i) => d.pick !== t.pick[i]).length;
  box.dataset.mismatch = String(mismatch);
  const W = 1000, H = 46, cw = (W - 20) / Math.max(1, rows.length);
  const svg = el("svg:svg", { class: "router-strip", viewBox: `0 0 ${W} ${H}`, role: "img",
                              "aria-label": "pick per llm turn" });
  rows.forEach((d, i) => {
    const r = el("svg:rect", { class: `c${d.pick % 8}`, x: 10 + cw * i, y: 4, width: Math.max(1, cw - 1), height: 22 });
    r.appendChild(el("svg:title", {}, `turn ${i}: ${model.candidates[d.pick]} (${rlPct(d.probs[d.pick])})`));
    svg.appendChild(r);
  });
  svg.appendChild(el("svg:text", { x: 10, y: 42 }, "turn 0"));
  svg.appendChild(el("svg:text", { x: W - 10, y: 42, "text-anchor": "end" }, `turn ${rows.length - 1}`));
  const legend = el("p", { class: "muted" });
  model.candidates.forEach((c, i) => legend.append(el("span", { class: `key c${i % 8}` }), `${c}  `));
  const table = el("table", { id: "router-turns" }), head = el("tr");
  for (const h of ["turn", "input tokens", "new tokens", "prefix reuse %", "previous tool", "think s", "pick", ...model.candidates])
    head.appendChild(el("th", {}, h));
  table.appendChild(el("thead")).appendChild(head);
  const body = table.appendChild(el("tbody")), tools = ["none", "shell", "editor", "other"];
  rows.forEach((d, i) => {
    const u = t.turns[i], x = rlTurnFeatures(t.turns, i, rd.block_size);
    const tr = el("tr", { "data-pick": model.candidates[d.pick] });
    const cells = [String(i), String(u[0]), String(u[0] - Math.min(u[2] * (rd.block_size || 16), u[0])), (100 * x[2]).toFixed(1),
                   tools[u[3]] ?? "?", (u[4] / 1000).toFixed(2)];
    cells.forEach((v, c) => tr.appendChild(el("td", c === 4 ? {} : { class: "n" }, v)));
    tr.appendChild(el("td", {}, model.candidates[d.pick]));
    for (let c = 0; c < n; c++) tr.appendChild(el("td", { class: "n" }, rlPct(d.probs[c])));
    body.appendChild(tr);
  });
  box.querySelector(".router-view").replaceChildren(svg, legend, table,
    el("p", { class: "muted" }, mismatch ? `${mismatch} turn(s) differ from atr's own decision` : "Every pick equals atr's own decision for the turn."));
}

function routerLab() {
  const block = document.getElementById("router-data"), box = document.getElementById("router-lab");
  if (!block || !box) return;
  const rd = JSON.parse(block.textContent), model = rd.model;
  rlLive(box, model);
  const tb = document.getElementById("router-trace");
  if (!rd.traces.length) return;
  const pickEl = el("select", { id: "router-trace-pick", "aria-label": "trace" });
  rd.traces.forEach((t, k) => pickEl.appendChild(el("option", { value: String(k) },
    `#${t.i + 1} ${t.id ?? "(no id)"} (${t.turns.length} llm turns)`)));
  const more = rd.report_traces > rd.embedded
    ? ` Traces with llm turns, up to 20 000 turns in all: ${rd.embedded} of the report's ${rd.report_traces}.` : "";
  tb.replaceChildren(el("h3", {}, "Decision per llm turn"),
    el("p", { class: "muted" }, `Features as the simulator computes them (sent on time, recorded outputs).${more}`),
    pickEl, el("div", { class: "router-view" }));
  pickEl.addEventListener("change", () => rlTrace(tb, model, rd, Number(pickEl.value)));
  rlTrace(tb, model, rd, 0);
}

SECTIONS.push(routerLab);

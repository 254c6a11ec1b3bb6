// report-results.js - the Results section's per-request charts, from
// data.requests (html-results.c): a CDF per latency (one curve per
// policy) and the latency race over time (rolling p50 / p99 of E2EL
// against send time). Log scale is automatic where the values span more
// than a factor of 20 (as in the sweep charts), with a toggle; hovering
// shows each curve's value. The percentile tables are in the HTML already.

const RESULT_METRICS = [["ttft", "TTFT"], ["tpot", "TPOT"], ["itl", "ITL"], ["e2el", "E2EL"]];

// A CDF {n, v} (v: µs, gap-coded at ranks round(k (n-1) / (m-1))) as
// [ms, fraction] points.
function cdfPoints(c) {
  const out = [], m = c.v.length;
  let us = 0;
  for (let k = 0; k < m; k++) {
    us += c.v[k];
    const rank = c.n <= 1000 ? k : Math.round(k * (c.n - 1) / (m - 1));
    out.push([us / 1000, (rank + 1) / c.n]);
  }
  return out;
}

// The rolling curves {t (ms, gap-coded), p50, p99 (µs)} as [s, ms] points.
function rollPoints(r, key) {
  const out = [];
  let t = 0;
  for (let k = 0; k < r.t.length; k++) {
    t += r.t[k];
    out.push([t / 1000, r[key][k] / 1000]);
  }
  return out;
}

function niceCeil(x) {
  if (!(x > 0)) return 1;
  const p = Math.pow(10, Math.floor(Math.log10(x)));
  return x <= p ? p : x <= 2 * p ? 2 * p : x <= 5 * p ? 5 * p : 10 * p;
}

function fmtNum(v) {
  const a = Math.abs(v);
  return a >= 100 ? v.toFixed(0) : a >= 10 ? v.toFixed(1) : a >= 1 ? v.toFixed(2) : v.toPrecision(2);
}

// An axis over [lo, hi]: linear from 0, or logarithmic over whole decades.
function axisOf(values, log) {
  let lo = Infinity, hi = 0;
  for (const v of values) { if (v > 0 && v < lo) lo = v; if (v > hi) hi = v; }
  if (!isFinite(lo)) { lo = 1; hi = Math.max(hi, 1); }
  if (log) {
    const a = Math.pow(10, Math.floor(Math.log10(lo))), b = Math.pow(10, Math.ceil(Math.log10(hi)));
    return { log, lo: a, hi: b > a ? b : a * 10 };
  }
  return { log, lo: 0, hi: niceCeil(hi) };
}

function spansDecades(values) {
  let lo = Infinity, hi = 0;
  for (const v of values) { if (v > 0 && v < lo) lo = v; if (v > hi) hi = v; }
  return isFinite(lo) && hi / lo > 20;
}

function ticksOf(ax) {
  if (!ax.log) return [0, 1, 2, 3, 4].map(i => ax.hi * i / 4);
  const out = [];
  for (let v = ax.lo; v <= ax.hi * 1.0001; v *= 10) out.push(v);
  return out;
}

function scale(ax, a, b) {
  if (!ax.log) return v => a + (b - a) * v / ax.hi;
  const l0 = Math.log10(ax.lo), l1 = Math.log10(ax.hi);
  return v => a + (b - a) * (Math.log10(Math.max(v, ax.lo)) - l0) / (l1 - l0);
}

// The last point of pts at or before x (points sorted by x), or null.
function stepAt(pts, x) {
  let lo = 0, hi = pts.length - 1, at = -1;
  while (lo <= hi) {
    const mid = (lo + hi) >> 1;
    if (pts[mid][0] <= x) { at = mid; lo = mid + 1; } else hi = mid - 1;
  }
  return at < 0 ? null : pts[at];
}

// One line chart into host. spec: series [{label, cls, pts, dash}], xLabel,
// yLabel, logAxis ("x" or "y": the one that may be logarithmic), yUnit,
// fixedY ([lo, hi] for a linear y axis), hover(series, x) -> text.
function lineChart(host, spec) {
  const W = 720, H = 300, L = 66, R = 16, T = 14, B = 46;
  const box = el("div", { class: "chart-box" });
  const all = spec.series.flatMap(s => s.pts.map(p => (spec.logAxis === "x" ? p[0] : p[1])));
  const toggle = el("label", { class: "log-toggle" });
  const check = el("input", { type: "checkbox" });
  check.checked = spansDecades(all);
  toggle.append(check, document.createTextNode(" log scale"));
  const legend = el("div", { class: "legend" });
  for (const s of spec.series) {
    const item = el("span", { class: "legend-item" });
    // The key is a piece of the curve itself: colour and dash, so p50
    // (solid) and p99 (dashed) read from the legend.
    const key = el("svg:svg", { class: "line-key", viewBox: "0 0 28 10", "aria-hidden": "true" });
    key.appendChild(el("svg:line", { class: `${s.cls}${s.dash ? " dash" : ""}`, x1: 0, x2: 28, y1: 5, y2: 5 }));
    item.append(key, document.createTextNode(s.label));
    legend.appendChild(item);
  }
  const draw = () => {
    const log = check.checked;
    const xs = spec.series.flatMap(s => s.pts.map(p => p[0]));
    const ys = spec.series.flatMap(s => s.pts.map(p => p[1]));
    const xa = axisOf(xs, spec.logAxis === "x" && log);
    const ya = spec.fixedY ? { log: false, lo: spec.fixedY[0], hi: spec.fixedY[1] }
                           : axisOf(ys, spec.logAxis === "y" && log);
    const X = scale(xa, L, W - R), Y = v => (ya.log ? scale(ya, H - B, T)(v)
                                                    : H - B - (H - B - T) * (v - ya.lo) / (ya.hi - ya.lo));
    const svg = el("svg:svg", { class: "chart req-svg", viewBox: `0 0 ${W} ${H}`, role: "img",
                                "aria-label": `${spec.yLabel} against ${spec.xLabel}` });
    for (const v of ticksOf(xa)) {
      svg.appendChild(el("svg:line", { class: "grid", x1: X(v), x2: X(v), y1: T, y2: H - B }));
      svg.appendChild(el("svg:text", { class: "tick", x: X(v), y: H - B + 15, "text-anchor": "middle" }, fmtNum(v)));
    }
    const yt = spec.fixedY ? [0, 0.25, 0.5, 0.75, 1].map(f => ya.lo + (ya.hi - ya.lo) * f) : ticksOf(ya);
    for (const v of yt) {
      svg.appendChild(el("svg:line", { class: "grid", x1: L, x2: W - R, y1: Y(v), y2: Y(v) }));
      svg.appendChild(el("svg:text", { class: "tick", x: L - 6, y: Y(v) + 4, "text-anchor": "end" }, fmtNum(v)));
    }
    const xl = spec.xLabel + (xa.log ? ", log scale)" : ")");
    const yl = spec.yLabel + (ya.log ? ", log scale)" : ")");
    svg.appendChild(el("svg:text", { class: "axis", x: (L + W - R) / 2, y: H - 8, "text-anchor": "middle" }, xl));
    svg.appendChild(el("svg:text", { class: "axis", transform: `translate(14 ${(T + H - B) / 2}) rotate(-90)`,
                                     "text-anchor": "middle" }, yl));
    for (const s of spec.series) {
      if (!s.pts.length) continue;
      let d = "";
      s.pts.forEach((p, k) => { d += `${k ? "L" : "M"}${X(p[0]).toFixed(1)},${Y(p[1]).toFixed(1)}`; });
      const path = el("svg:path", { class: `curve ${s.cls}${s.dash ? " dash" : ""}`, d });
      path.appendChild(el("svg:title", {}, s.label));
      svg.appendChild(path);
    }
    const cross = el("svg:line", { class: "cross", x1: 0, x2: 0, y1: T, y2: H - B, visibility: "hidden" });
    const tip = el("svg:text", { class: "hover", x: L + 8, y: T + 12 });
    svg.append(cross, tip);
    svg.addEventListener("mousemove", e => {
      const r = svg.getBoundingClientRect();
      const px = (e.clientX - r.left) * W / r.width;
      if (px < L || px > W - R) return;
      const f = (px - L) / (W - L - R);
      const x = xa.log ? Math.pow(10, Math.log10(xa.lo) + f * (Math.log10(xa.hi) - Math.log10(xa.lo)))
                       : xa.hi * f;
      cross.setAttribute("x1", px); cross.setAttribute("x2", px);
      cross.setAttribute("visibility", "visible");
      tip.replaceChildren();
      spec.series.forEach((s, k) => {
        tip.appendChild(el("svg:tspan", { x: L + 8, dy: k ? 14 : 0 }, spec.hover(s, x)));
      });
    });
    svg.addEventListener("mouseleave", () => { cross.setAttribute("visibility", "hidden"); tip.replaceChildren(); });
    box.replaceChildren(svg);
  };
  check.addEventListener("change", draw);
  host.replaceChildren(toggle, box, legend);
  draw();
}

function resultCharts() {
  const sets = data.requests || [];
  if (!sets.length) return;
  for (const [key, label] of RESULT_METRICS) {
    const host = document.querySelector(`figure.req-chart[data-metric="${key}"] .chart-host`);
    if (!host) continue;
    const series = sets.map((s, i) => ({ label: s.label, cls: `c${i % 8}`, pts: cdfPoints(s.cdf[key]) }));
    lineChart(host, {
      series, xLabel: `${label} (ms`, yLabel: "fraction at or below (CDF", logAxis: "x", fixedY: [0, 1],
      hover: (s, x) => {
        const p = stepAt(s.pts, x);
        return `${s.label}: ${((p ? p[1] : 0) * 100).toFixed(1)} % ≤ ${fmtNum(x)} ms`;
      },
    });
  }
  const host = document.querySelector("figure.req-roll .chart-host");
  if (!host) return;
  const series = [];
  sets.forEach((s, i) => {
    series.push({ label: `${s.label} p50`, cls: `c${i % 8}`, pts: rollPoints(s.roll, "p50") });
    series.push({ label: `${s.label} p99`, cls: `c${i % 8}`, pts: rollPoints(s.roll, "p99"), dash: true });
  });
  lineChart(host, {
    series, xLabel: "request send time (s", yLabel: "E2EL (ms", logAxis: "y",
    hover: (s, x) => {
      const p = stepAt(s.pts, x);
      return p ? `${s.label}: ${fmtNum(p[1])} ms at ${fmtNum(p[0])} s` : `${s.label}: n/a`;
    },
  });
}

SECTIONS.push(resultCharts);

// report-replay.js - the Tool replay section's CDFs, from data.replay_cdfs
// (html-replay.c): per folder, step latency with one curve per
// configuration, and the dynamic controller's reaction times where it made
// adjustments (dashed: their upper bounds, where they differ). Drawn with report-results.js's lineChart (log toggle,
// hover); the percentiles are in the section's table already.

function replayCharts() {
  const folders = data.replay_cdfs || [];
  const figs = [...document.querySelectorAll("#replay figure.replay-cdf")];
  let f = 0;
  folders.forEach(configs => {
    for (const kind of ["latency", "reaction"]) {
      const fig = figs[f];
      if (!fig || fig.dataset.kind !== kind) continue;   // no reaction figure for this folder
      f++;
      const series = configs
        .map((c, i) => ({ label: c.config, cls: `c${i % 8}`, pts: c[kind] ? cdfPoints(c[kind]) : [] }))
        .filter(s => s.pts.length);
      // reaction: each config's upper bound dashed beside it, where it differs
      if (kind === "reaction")
        configs.forEach((c, i) => {
          if (c.reaction_bound)
            series.push({ label: `${c.config} bound`, cls: `c${i % 8}`, pts: cdfPoints(c.reaction_bound), dash: true });
        });
      const what = kind === "latency" ? "step latency" : "reaction time";
      lineChart(fig.querySelector(".chart-host"), {
        series, xLabel: `${what} (ms`, yLabel: "fraction at or below (CDF", logAxis: "x", fixedY: [0, 1],
        hover: (s, x) => {
          const p = stepAt(s.pts, x);
          return `${s.label}: ${((p ? p[1] : 0) * 100).toFixed(1)} % ≤ ${fmtNum(x)} ms`;
        },
      });
    }
  });
}

SECTIONS.push(replayCharts);

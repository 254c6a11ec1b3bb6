// report-layout.mjs REPORT.html OUT_DIR - layout facts of an `atr report`
// page measured in headless Debian Chromium at a 1400 x 900 viewport (the
// window a reader of the demo's report has), written to OUT_DIR/layout.json:
// the sections shown; per tool replay table its scrollWidth and the words
// (whitespace-separated) that a line break splits; per peak-memory chart the
// tallest bar's share of the plot height and its off-scale limit labels; the
// latency race's legend texts, whether its p99 keys are dashed and its p50
// keys solid, and each drawn curve's contrast against white. Screenshots of
// the Tool replay section and the latency race go to OUT_DIR for a person
// to look at; nothing is compared with pixels.
import { openOffline } from "./offline.mjs";
import { writeFileSync } from "node:fs";

const [report, outDir] = process.argv.slice(2);
if (!report || !outDir) {
  console.error("usage: report-layout.mjs REPORT.html OUT_DIR");
  process.exit(2);
}
const out = {};
const { browser, page } = await openOffline(report, out, { width: 1400, height: 900 });
try {
  out.sections = await page.$$eval("section[id]", (s) => s.map((e) => e.id));
  out.pageScrollWidth = await page.evaluate(() => document.documentElement.scrollWidth);
  out.replayTables = await page.$$eval("#replay table", (ts) => ts.map((t) => {
    const broken = [];
    for (const cell of t.querySelectorAll("th, td")) {
      const walker = document.createTreeWalker(cell, NodeFilter.SHOW_TEXT);
      for (let n = walker.nextNode(); n; n = walker.nextNode()) {
        const re = /\S+/g;
        for (let m = re.exec(n.data); m; m = re.exec(n.data)) {
          const r = document.createRange();
          r.setStart(n, m.index);
          r.setEnd(n, m.index + m[0].length);
          const tops = new Set([...r.getClientRects()].map((x) => Math.round(x.top)));
          if (tops.size > 1) broken.push(m[0]);
        }
      }
    }
    return { scrollWidth: t.scrollWidth, right: Math.round(t.getBoundingClientRect().right),
             broken };
  }));
  out.memCharts = await page.$$eval("svg.replay-chart", (svgs) => svgs.map((s) => {
    const ys = [...s.querySelectorAll("line.grid")].map((l) => Number(l.getAttribute("y1")));
    const plot = Math.max(...ys) - Math.min(...ys);
    const bars = [...s.querySelectorAll("rect.mem-ok, rect.mem-event, rect.mem-oom")];
    const tallest = Math.max(0, ...bars.map((b) => Number(b.getAttribute("height"))));
    return { fill: plot > 0 ? tallest / plot : 0,
             offScale: [...s.querySelectorAll("text.off-scale")].map((t) => t.firstChild.data) };
  }));
  out.roll = await page.$$eval("figure.req-roll", (fs) => fs.map((f) => {
    const lum = (c) => {
      const v = c.match(/[\d.]+/g).slice(0, 3).map((x) => Number(x) / 255)
        .map((x) => (x <= 0.03928 ? x / 12.92 : ((x + 0.055) / 1.055) ** 2.4));
      return 0.2126 * v[0] + 0.7152 * v[1] + 0.0722 * v[2];
    };
    const contrast = (c) => 1.05 / (lum(c) + 0.05);
    const items = [...f.querySelectorAll(".legend .legend-item")];
    return {
      legend: items.map((i) => i.textContent),
      keysDashedAsLabelled: items.length > 0 && items.every((i) => {
        const key = i.querySelector("svg.line-key line");      /* a swatch of the curve */
        return key && /p99$/.test(i.textContent) === (getComputedStyle(key).strokeDasharray !== "none");
      }),
      curveContrast: [...f.querySelectorAll("svg path.curve")]
        .map((p) => contrast(getComputedStyle(p).stroke)),
    };
  }));
  const shots = [["#replay", "replay"], ["figure.req-roll", "latency-race"]];
  for (const [sel, name] of shots) {
    const e = await page.$(sel);
    if (e) await e.screenshot({ path: `${outDir}/layout-${name}.png` }).catch(() => {});
  }
} finally {
  await browser.close();
}
writeFileSync(`${outDir}/layout.json`, JSON.stringify(out, null, 1));

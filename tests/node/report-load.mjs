// report-load.mjs REPORT.html [RUNS] - the report's load time in headless
// Debian Chromium (playwright-core): from navigation to the page's
// "everything drawn" mark (body[data-ready]), then the time to open the
// first trace's timeline (its data is inflated on first use), and the
// explorer's row counter. Prints one
// JSON line per run; the median is the figure in BENCHMARKS.md.
import { chromium } from "playwright-core";
import { resolve } from "node:path";

const [report, runsArg] = process.argv.slice(2);
if (!report) {
  console.error("usage: report-load.mjs REPORT.html [RUNS]");
  process.exit(2);
}
const url = "file://" + resolve(report);
const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
  args: ["--no-sandbox", "--disable-gpu"],
});
try {
  for (let r = 0; r < Number(runsArg || 3); r++) {
    const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    const t0 = Date.now();
    await page.goto(url, { waitUntil: "load" });
    await page.waitForFunction(() => document.body.dataset.ready === "1", null, { timeout: 60000 });
    const loadMs = Date.now() - t0;
    const rows = await page.$eval("#trace-tools .muted", (e) => e.textContent).catch(() => null);
    let timelineMs = null;
    const row = await page.$("#traces tbody tr");
    if (row) {
      const t1 = Date.now();
      await row.click();
      await page.waitForSelector("#timeline svg", { timeout: 60000 });
      timelineMs = Date.now() - t1;
    }
    console.log(JSON.stringify({ loadMs, timelineMs, rows }));
    await page.close();
  }
} finally {
  await browser.close();
}

// dag-timeline.mjs REPORT.html OUT.json - opens an `atr report` of a DAG
// trace in headless Debian Chromium (offline.mjs), clicks the explorer's
// row whose id is dag/fork-join and writes OUT.json: console and page
// errors, the timeline's row labels and its bars' rows (a y per bar).
import { openOffline } from "./offline.mjs";
import { writeFileSync } from "node:fs";

const [report, outFile] = process.argv.slice(2);
const out = {};
const { browser, page } = await openOffline(report, out);
try {
  const rows = await page.$$("#traces tbody tr");
  for (const r of rows)
    if ((await r.textContent()).includes("dag/fork-join")) { await r.click(); break; }
  await page.waitForSelector("#timeline svg rect", { timeout: 5000 });
  out.labels = await page.$$eval("#timeline svg text", (t) => t.map((e) => e.textContent));
  out.bars = await page.$$eval("#timeline svg rect", (r) => r.map((e) => Number(e.getAttribute("y"))));
} finally {
  await browser.close();
}
writeFileSync(outFile, JSON.stringify(out));

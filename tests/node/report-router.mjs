// report-router.mjs REPORT.html OUT_DIR SETS.json - the Router lab of an
// `atr report` file in headless Debian Chromium (playwright-core, no
// download), offline as report-check.mjs opens it: for each feature set of
// SETS.json (an array of {name: value} objects) types the values into the
// lab's fields and reads its pick and every candidate's probability and
// logit (full precision, from data attributes); then the per-turn picks of
// every trace in the lab's trace picker, and whether they agree with the
// picks atr embedded. Writes OUT_DIR/router.json (with console and page
// errors and every network request attempted, all refused) and a
// screenshot of the section, OUT_DIR/section-router.png.
import { openOffline } from "./offline.mjs";
import { readFileSync, writeFileSync } from "node:fs";

const [report, outDir, setsFile] = process.argv.slice(2);
if (!report || !outDir || !setsFile) {
  console.error("usage: report-router.mjs REPORT.html OUT_DIR SETS.json");
  process.exit(2);
}
const sets = JSON.parse(readFileSync(setsFile, "utf8"));
const out = { decisions: [], traces: [] };
const { browser, page } = await openOffline(report, out);
try {
  out.features = await page.$$eval("#router-features input[type=number]", (f) => f.map((e) => e.id));
  out.weightless = await page.$$eval("#router-features label.weightless", (l) => l.map((e) => e.getAttribute("for")));
  for (const set of sets) {
    // Every field is set, those the set leaves out to 0, as the CLI has them.
    for (const id of out.features) {
      const name = id.replace(/^router-f-/, "");
      await page.fill("#" + id, String(name in set ? set[name] : 0));
    }
    out.decisions.push(await page.evaluate(() => ({
      pick: document.getElementById("router-pick").dataset.pick,
      shown: document.getElementById("router-pick").textContent,
      scores: Object.fromEntries([...document.querySelectorAll("#router-out g[data-candidate]")]
        .map((g) => [g.dataset.candidate, Number(g.dataset.score)])),
      logits: Object.fromEntries([...document.querySelectorAll("#router-out g[data-candidate]")]
        .map((g) => [g.dataset.candidate, Number(g.dataset.logit)])),
    })));
  }
  const options = await page.$$eval("#router-trace-pick option", (o) => o.map((e) => e.value));
  for (const v of options) {
    await page.selectOption("#router-trace-pick", v);
    out.traces.push(await page.evaluate(() => ({
      mismatch: Number(document.getElementById("router-trace").dataset.mismatch),
      picks: [...document.querySelectorAll("#router-turns tbody tr")].map((r) => r.dataset.pick),
    })));
  }
  if (options.length) await page.selectOption("#router-trace-pick", options[0]);
  const section = await page.$("#router");
  if (section) await section.screenshot({ path: `${outDir}/section-router.png` });
} finally {
  await browser.close();
}
writeFileSync(`${outDir}/router.json`, JSON.stringify(out, null, 1));

// report-check.mjs REPORT.html OUT_DIR [FILTER_TEXT] - opens an `atr report`
// file in headless Debian Chromium (playwright-core, no download) as a user
// would, offline, and writes OUT_DIR/check.json: console and page errors,
// every network request attempted (all are refused), dialogs (an alert from
// injected markup), the sections shown, the trace rows before and after
// typing FILTER_TEXT into the explorer's filter, whether a trace timeline
// opens on a row click, the Results' per-request charts (curves per CDF,
// the log toggle, the hover readout), the Overview's token race (its clock
// advances, pause holds it), and the load time to the last chart drawn.
// One screenshot per section goes to OUT_DIR.
import { openOffline } from "./offline.mjs";
import { writeFileSync } from "node:fs";
import { resolve } from "node:path";

const [report, outDir, filterText] = process.argv.slice(2);
if (!report || !outDir) {
  console.error("usage: report-check.mjs REPORT.html OUT_DIR [FILTER_TEXT]");
  process.exit(2);
}
const url = "file://" + resolve(report);
const out = { sections: [] };
const { browser, page } = await openOffline(report, out);
try {
  out.injected = await page.evaluate(() => window.__atr_injected === true);
  out.sections = await page.$$eval("section[id]", (s) => s.map((e) => e.id));
  const rows = () => page.$$eval("#traces tbody tr:not([hidden])", (r) => r.length);
  out.traceRowsShown = await rows().catch(() => -1);
  out.traceCount = await page.evaluate(() => {
    const d = document.getElementById("data");
    try { return JSON.parse(d.textContent).traces.length; } catch (e) { return -1; }
  });
  if (filterText) {
    const box = await page.$("#traces input[type=search]");
    if (box) {
      await box.fill(filterText);
      await page.waitForTimeout(100);
      out.traceRowsFiltered = await rows();
      await box.fill("");
    }
  }
  const first = await page.$("#traces tbody tr");
  if (first) {
    await first.click();
    out.timelineOpened = await page.waitForSelector("#timeline svg", { timeout: 3000 })
      .then(() => true).catch(() => false);
  }
  // Results: the per-request CDFs (a curve per per-request file), the
  // rolling-percentile chart, the log toggle and the hover readout.
  out.cdfCurves = await page.$$eval("figure.req-chart", (fs) => Object.fromEntries(
    fs.map((f) => [f.dataset.metric, f.querySelectorAll("svg path.curve").length])));
  out.rollCurves = await page.$$eval("figure.req-roll svg path.curve", (p) => p.length);
  out.replayCurves = await page.$$eval("figure.replay-cdf", (fs) => Object.fromEntries(
    fs.map((f) => [f.dataset.kind, f.querySelectorAll("svg path.curve").length])));
  out.requestSets = await page.evaluate(() => {
    try { return (JSON.parse(document.getElementById("data").textContent).requests || []).length; }
    catch (e) { return -1; }
  });
  const axisText = () => page.$eval("figure.req-chart[data-metric=ttft] svg",
    (s) => [...s.querySelectorAll("text.axis")].map((t) => t.textContent).join(" | "));
  if (await page.$("figure.req-chart[data-metric=ttft] svg")) {
    out.cdfAxisBefore = await axisText();
    await page.click("figure.req-chart[data-metric=ttft] .log-toggle input");
    out.cdfAxisAfter = await axisText();
    const svg = await page.$("figure.req-chart[data-metric=ttft] svg");
    const b = await svg.boundingBox();
    await page.mouse.move(b.x + b.width * 0.5, b.y + b.height * 0.5);
    out.cdfHover = await page.$eval("figure.req-chart[data-metric=ttft] svg text.hover",
      (t) => t.textContent);
  }
  // The token race: it plays by itself (no reduced motion here: playing,
  // or already at its end on a slow machine, ~8 s after load), its clock
  // (#race data-t, ms) advances, pause stops it. The clock is timed at
  // the slowest speed from the start, so a loaded machine cannot reach
  // the end between the two reads.
  if (await page.$("#race")) {
    const clock = () => page.$eval("#race", (r) => Number(r.dataset.t || "0"));
    out.race = { lanes: await page.$$eval("#race svg.race-svg", (s) => s.length),
                 playingAtLoad: await page.$eval("#race", (r) => r.dataset.playing === "1" ||
                   r.querySelector(".race-play").textContent === "replay") };
    await page.click("#race .race-speed[data-speed='0.5']");
    if (await page.$eval("#race", (r) => r.dataset.playing === "1"))
      await page.click("#race .race-play");          /* pause, */
    await page.click("#race .race-play");            /* then play (from 0 when it had ended) */
    out.race.t0 = await clock();
    await page.waitForTimeout(600);
    out.race.t1 = await clock();
    await page.click("#race .race-play");            /* pause */
    const playing = await page.$eval("#race", (r) => r.dataset.playing === "1");
    if (!playing) {
      const p0 = await clock();
      await page.waitForTimeout(300);
      out.race.pauseHolds = (await clock()) === p0;
    }
    out.race.barsDrawn = await page.$$eval("#race rect.race-bar", (r) =>
      r.filter((x) => Number(x.getAttribute("width")) > 0).length);
    // With reduced motion asked for, the race waits for its play button.
    const calm = await browser.newPage({ reducedMotion: "reduce" });
    await calm.route("**/*", (route) => (route.request().url() === url ? route.continue()
                                                                         : route.abort()));
    await calm.goto(url, { waitUntil: "load" });
    await calm.waitForTimeout(400);
    out.race.reducedMotion = await calm.$eval("#race", (r) => ({ playing: r.dataset.playing,
                                                                  t: Number(r.dataset.t) }));
    await calm.close();
  }
  for (const id of out.sections) {
    const el = await page.$("#" + id);
    if (el) await el.screenshot({ path: `${outDir}/section-${id}.png` }).catch(() => {});
  }
} finally {
  await browser.close();
}
writeFileSync(`${outDir}/check.json`, JSON.stringify(out, null, 1));

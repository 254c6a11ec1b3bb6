// dashboard-check.mjs URL OUT_DIR LIVE_RUN DONE_RUN READY [ROUTER_MODEL DEST] - opens a running
// `atr dashboard` in headless Debian Chromium (playwright-core), writes the
// file READY once the page is open (the caller starts a replay writing
// into the watched folders then), and writes OUT_DIR/check.json: console and page
// errors (a Content-Security-Policy violation is one), requests to any
// other origin (refused), the LIVE_RUN row's "done" before and after an
// update pushed by the event stream (no reload), the status the page shows
// for LIVE_RUN once its file stops growing and for DONE_RUN once its
// result lands, the final cells of both rows, and the same table with
// JavaScript off (the state the page was built at). DONE_RUN is written
// live too (its FILE.partial): its row is selected with a click, its ETA
// shown, and a second page opened on it (?run=) records each redrawing of
// its CDFs with more points while it runs (no reload). Screenshots of the run list, the live CDFs, the page, and
// the no-JS page go to OUT_DIR. After a reload LIVE_RUN (a proxy journal)
// is clicked: its CDFs come split by upstream x policy, with an ITL chart.
// ROUTER_MODEL DEST (optional): that model copied to DEST in a watched
// folder; the Router lab must arrive by the event stream and be set up.
import { chromium } from "playwright-core";
import { copyFileSync, renameSync, writeFileSync } from "node:fs";
import { basename, dirname, join } from "node:path";

const [url, outDir, liveRun, doneRun, ready, routerModel, routerDest] = process.argv.slice(2);
if (!url || !outDir || !liveRun || !doneRun || !ready) {
  console.error("usage: dashboard-check.mjs URL OUT_DIR LIVE_RUN DONE_RUN READY");
  process.exit(2);
}
const origin = new URL(url).origin;
const out = { consoleErrors: [], pageErrors: [], foreign: [], dialogs: [] };
const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
  args: ["--no-sandbox", "--disable-gpu"],
});

async function open(javaScriptEnabled, at = url) {
  const ctx = await browser.newContext({ javaScriptEnabled, viewport: { width: 1400, height: 900 } });
  const page = await ctx.newPage();
  page.on("console", (m) => { if (m.type() === "error") out.consoleErrors.push(m.text()); });
  page.on("pageerror", (e) => out.pageErrors.push(String(e)));
  page.on("dialog", async (d) => { out.dialogs.push(d.message()); await d.dismiss(); });
  await page.route("**/*", (route) => {
    const u = route.request().url();
    if (u.startsWith(origin + "/")) return route.continue();
    out.foreign.push(u);
    return route.abort();
  });
  await page.goto(at, { waitUntil: "load" });
  return page;
}

// The row of run as {status, cells}, or null.
const rowOf = (page, run) => page.evaluate((run) => {
  const tr = [...document.querySelectorAll("#runs-body tr")].find((r) => r.dataset.run === run);
  return tr ? { status: tr.dataset.status, cells: [...tr.cells].map((c) => c.textContent) } : null;
}, run);
const DONE = 3, ETA = 8;

// The live CDF figure: which run, the points behind each chart, redraws.
const cdfOf = (page) => page.evaluate(() => {
  const f = document.getElementById("live-cdf");
  const n = (k) => Number(f.querySelector(`.chart-host[data-metric="${k}"]`).dataset.n || 0);
  return { hidden: f.hidden, run: document.getElementById("live-cdf-run").textContent,
           ttft: n("ttft"), latency: n("latency"), itl: n("itl"), draws: Number(f.dataset.draws || 0),
           itlHidden: f.querySelector('.chart-host[data-metric="itl"]').hidden,
           ttftSeries: Number(f.querySelector('.chart-host[data-metric="ttft"]').dataset.series || 0),
           paths: f.querySelectorAll("svg path.curve").length };
});

async function untilCdf(page, test, ms) {
  const end = Date.now() + ms;
  for (;;) {
    const v = await cdfOf(page);
    if (test(v) || Date.now() > end) return v;
    await page.waitForTimeout(50);
  }
}

async function until(page, what, test, ms) {
  const end = Date.now() + ms;
  for (;;) {
    const v = await rowOf(page, what);
    if (v && test(v)) return v;
    if (Date.now() > end) return v;
    await page.waitForTimeout(50);
  }
}

// Every drawing of the live CDF figure and every state of run's row, as the
// page made them: MutationObservers on the draw counter and the table
// (one callback per event, as each event is its own task), so a slow poll
// cannot miss the states between.
const recordDraws = (page) => page.evaluate((run) => {
  const f = document.getElementById("live-cdf");
  window.__draws = [];
  new MutationObserver(() => {
    const n = (k) => Number(f.querySelector(`.chart-host[data-metric="${k}"]`).dataset.n || 0);
    window.__draws.push({ run: document.getElementById("live-cdf-run").textContent, latency: n("latency"),
                          draws: Number(f.dataset.draws || 0), hidden: f.hidden,
                          paths: f.querySelectorAll("svg path.curve").length });
  }).observe(f, { attributes: true, attributeFilter: ["data-draws"] });
  const body = document.getElementById("runs-body");
  window.__rows = [];
  new MutationObserver(() => {
    const tr = [...body.querySelectorAll("tr")].find((r) => r.dataset.run === run);
    if (tr) window.__rows.push({ status: tr.dataset.status, cells: [...tr.cells].map((c) => c.textContent) });
  }).observe(body, { childList: true });
}, doneRun);

try {
  const page = await open(true);
  await page.evaluate(() => { window.__sameDocument = 1; });
  // A second page opened on DONE_RUN (?run=) before it exists: it follows
  // the run's CDFs from its first record, whatever the pace of the
  // machine (the first page's click may come when the run is nearly done).
  const at = new URL(url);
  at.searchParams.set("run", doneRun);
  const follower = await open(true, at.href);
  await recordDraws(follower);
  writeFileSync(ready, "");
  await until(page, liveRun, () => true, 30000);
  // The row and the version it belongs to, read together (an event may
  // land between two reads).
  const [doneAtLoad, pageVersion] = await page.evaluate((run) => {
    const tr = [...document.querySelectorAll("#runs-body tr")].find((r) => r.dataset.run === run);
    return [tr ? Number(tr.cells[3].textContent) : -1,
            document.getElementById("live-state").dataset.version];
  }, liveRun);
  out.doneAtLoad = doneAtLoad;
  const later = await until(page, liveRun, (v) => Number(v.cells[DONE]) > out.doneAtLoad, 20000);
  out.doneLater = later ? Number(later.cells[DONE]) : -1;
  out.versionAdvanced = (await page.$eval("#live-state", (e) => e.dataset.version)) !== pageVersion;
  out.sameDocument = await page.evaluate(() => window.__sameDocument === 1);
  // The other run, written live (FILE.partial): click its row, watch its CDFs grow.
  await until(page, doneRun, (v) => v.status === "running" && v.cells[ETA] !== "", 20000);
  await page.locator(`#runs-body tr[data-run="${doneRun}"]`).click();
  out.clicked = await untilCdf(page, (v) => v.run === doneRun && v.latency > 0, 10000);
  out.selectedClass = await page.$eval(`#runs-body tr[data-run="${doneRun}"]`, (e) => e.classList.contains("selected"));
  await page.locator("#live").screenshot({ path: `${outDir}/dashboard-live.png` });
  const done = await until(page, doneRun, (v) => v.status === "complete", 30000);
  out.cdfFinal = await untilCdf(page, (v) => v.latency === Number(done.cells[5]), 10000);
  out.followerFinal = await untilCdf(follower, (v) => v.latency === Number(done.cells[5]), 10000);
  out.cdfDraws = await follower.evaluate(() => window.__draws);
  out.doneRunWhileRunning = await follower.evaluate(
    (eta) => window.__rows.find((r) => r.status === "running" && r.cells[eta] !== "") || null, ETA);
  out.sameDocumentAfterCdf = await page.evaluate(() => window.__sameDocument === 1) &&
    await follower.evaluate(() => Array.isArray(window.__draws));   /* a reload would clear it */
  await follower.context().close();
  await page.locator("#live-cdf").screenshot({ path: `${outDir}/dashboard-cdf.png` });
  const stopped = await until(page, liveRun, (v) => v.status === "stopped", 30000);
  out.final = { [doneRun]: done, [liveRun]: stopped };
  out.sections = await page.$$eval("section[id]", (s) => s.map((e) => e.id));
  await page.screenshot({ path: `${outDir}/dashboard-runs.png` });
  // A fresh load: the report's sections from the files as they are now.
  await page.reload({ waitUntil: "load" });
  out.sectionsAfterReload = await page.$$eval("section[id]", (s) => s.map((e) => e.id));
  const results = await page.$("#results");
  if (results) await results.screenshot({ path: `${outDir}/dashboard-results.png` });
  // The journal's row: its upstream x policy pairs' TTFT and ITL CDFs.
  await page.locator(`#runs-body tr[data-run="${liveRun}"]`).click();
  out.journalCdf = await untilCdf(page, (v) => v.run === liveRun && v.itl > 0, 10000);
  await page.locator("#live-cdf").screenshot({ path: `${outDir}/dashboard-proxy-cdf.png` });
  // A router model landing in the watched folder: the Router lab comes as
  // a "router" event, swapped in and set up (its live decision drawn).
  if (routerModel && routerDest) {
    const tmp = join(dirname(routerDest), `.${basename(routerDest)}.part`);   /* hidden: not walked */
    await page.evaluate(() => { window.__sameDocument = 1; });   /* the reload above cleared it */
    copyFileSync(routerModel, tmp);
    renameSync(tmp, routerDest);
    await page.waitForSelector("#router[data-live] #router-features", { timeout: 10000 }).catch(() => {});
    out.routerLive = await page.evaluate(() => {
      const r = document.getElementById("router");
      return { live: !!(r && r.dataset.live), features: document.querySelectorAll("#router-features input").length,
               sameDocument: window.__sameDocument === 1 };
    });
  }
  const nojs = await open(false);
  out.noJs = {
    done: await rowOf(nojs, doneRun),
    live: await rowOf(nojs, liveRun),
    state: await nojs.$eval("#live-state", (e) => e.textContent),
  };
  await nojs.screenshot({ path: `${outDir}/dashboard-nojs.png` });
} finally {
  writeFileSync(`${outDir}/check.json`, JSON.stringify(out, null, 1));
  await browser.close();
}

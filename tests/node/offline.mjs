// offline.mjs - opens an `atr report` file in headless Debian Chromium
// (playwright-core, no download) the way every browser test needs it:
// offline (every request but the file itself refused and listed), console
// and page errors and dialogs collected, and the page loaded to its
// "everything drawn" mark (body[data-ready]).
import { chromium } from "playwright-core";
import { resolve } from "node:path";

// Fills out.consoleErrors, out.pageErrors, out.requests, out.dialogs,
// out.loadMs and out.ready; returns {browser, page}. The caller closes
// the browser. viewport: the window's size, 1280 x 900 unless given.
export async function openOffline(report, out, viewport = { width: 1280, height: 900 }) {
  const url = "file://" + resolve(report);
  Object.assign(out, { consoleErrors: [], pageErrors: [], requests: [], dialogs: [] });
  const browser = await chromium.launch({
    executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
    args: ["--no-sandbox", "--disable-gpu"],
  });
  const page = await browser.newPage({ viewport });
  page.on("console", (m) => { if (m.type() === "error") out.consoleErrors.push(m.text()); });
  page.on("pageerror", (e) => out.pageErrors.push(String(e)));
  page.on("dialog", async (d) => { out.dialogs.push(d.message()); await d.dismiss(); });
  await page.route("**/*", (route) => {
    const u = route.request().url();
    if (u === url) return route.continue();
    out.requests.push(u);
    return route.abort();
  });
  const t0 = Date.now();
  await page.goto(url, { waitUntil: "load" });
  await page.waitForFunction(() => document.body && document.body.dataset.ready === "1",
                             null, { timeout: 20000 }).catch(() => {});
  out.loadMs = Date.now() - t0;
  out.ready = await page.evaluate(() => document.body.dataset.ready === "1");
  return { browser, page };
}

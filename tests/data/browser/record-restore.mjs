// record-restore.mjs OUT.zip - records tests/data/browser/restore.zip: a real
// Playwright trace with DOM snapshots (tracing.start({snapshots: true})) of
// a page.setContent page and locator actions, driven by npm playwright-core
// (tests/node) on Debian's Chromium. The page's stylesheet is served by
// page.route, so the trace's network holds it. Step 6 waits for an element
// that a click's script adds 300 ms later: its "before" snapshot lacks it.
// Run: node tests/data/browser/record-restore.mjs tests/data/browser/restore.zip
import { createRequire } from 'module';
const require = createRequire(new URL('../../node/', import.meta.url));
const { chromium } = require('playwright-core');

const out = process.argv[2];
const exe = process.env.ATR_CHROMIUM || '/usr/lib/chromium/chromium';
const html = `<!doctype html><html><head><title>Sign up</title>
<link rel="stylesheet" href="https://app.test/style.css"></head>
<body><h1>Sign up</h1>
<form id="f"><label for="name">Name</label> <input id="name">
<label for="email">Email</label> <input id="email" type="email">
<label><input type="checkbox" id="terms"> I agree</label>
<button id="submit" type="button">Create account</button></form>
<div id="msg"></div>
<script>
document.getElementById('submit').addEventListener('click', () => setTimeout(() => {
  const p = document.createElement('p'); p.id = 'done'; p.textContent = 'Welcome';
  document.body.append(p);
}, 300));
</script></body></html>`;

const browser = await chromium.launch({ executablePath: exe, headless: true,
                                        args: ['--no-sandbox', '--disable-gpu'] });
const context = await browser.newContext({ viewport: { width: 1280, height: 720 } });
await context.route('https://app.test/**', route =>
  route.fulfill({ status: 200, contentType: 'text/css', body: 'h1 { color: rgb(0, 90, 0) }' }));
await context.tracing.start({ snapshots: true, screenshots: false, sources: false });
const page = await context.newPage();
await page.setContent(html);
await page.locator('#name').fill('Ada');
await page.getByLabel('Email').fill('ada@example.com');
await page.locator('#terms').check();
await page.getByRole('button', { name: 'Create account' }).click();
await page.locator('#done').waitFor();
await page.locator('h1').click();
await context.tracing.stop({ path: out });
await browser.close();

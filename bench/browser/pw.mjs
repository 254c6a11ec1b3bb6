// pw.mjs SITE.json OUT.json - the same calls as atr's replay, driven by
// npm playwright-core on the same Debian Chromium, the same recorded site
// served with page.route. Per step: wall latency, the browser tree's CPU
// (from /proc, read outside the timed window); and node's own CPU in all.
import { createRequire } from 'module';
import fs from 'fs';
const require = createRequire(new URL('../../tests/node/', import.meta.url));
const { chromium } = require('playwright-core');

const [, , sitePath, outPath] = process.argv;
const { site, calls } = JSON.parse(fs.readFileSync(sitePath, 'utf8'));
const exe = process.env.ATR_CHROMIUM || '/usr/lib/chromium/chromium';

function treeCpuMs(pid) {
  const tick = 100;   // USER_HZ
  let total = 0;
  const walk = p => {
    try {
      const st = fs.readFileSync(`/proc/${p}/stat`, 'utf8');
      const f = st.slice(st.lastIndexOf(')') + 2).split(' ');
      total += (+f[11] + +f[12]) * 1000 / tick;
      for (const t of fs.readdirSync(`/proc/${p}/task`))
        for (const c of fs.readFileSync(`/proc/${p}/task/${t}/children`, 'utf8').split(' ').filter(Boolean))
          walk(c);
    } catch { /* exited */ }
  };
  walk(pid);
  return total;
}

const t0 = performance.now();
const cpu0 = process.cpuUsage();
const browser = await chromium.launch({ executablePath: exe, headless: true, args: ['--no-sandbox', '--disable-gpu'] });
const context = await browser.newContext({ viewport: { width: 1280, height: 720 } });
await context.route('**/*', route => {
  const r = site[route.request().url().split('#')[0]];
  if (!r) return route.fulfill({ status: 404, body: 'not recorded' });
  return route.fulfill({ status: r.status, headers: r.headers, body: Buffer.from(r.body, 'base64') });
});
const startMs = performance.now() - t0;
const pid = browser._connection ? null : null;   // not exposed for launch(): found below
const bpid = (() => {
  for (const p of fs.readdirSync('/proc').filter(x => /^\d+$/.test(x))) {
    try {
      const cmd = fs.readFileSync(`/proc/${p}/cmdline`, 'utf8');
      const ppid = +fs.readFileSync(`/proc/${p}/stat`, 'utf8').split(') ')[1].split(' ')[1];
      if (ppid === process.pid && cmd.includes('chromium')) return p;
    } catch { }
  }
  return null;
})();
let page;
const steps = [];
for (const c of calls) {
  const cpuB = treeCpuMs(bpid);
  const s = performance.now();
  const p = c.params;
  switch (c.method) {
    case 'newPage': page = await context.newPage(); break;
    case 'goto': await page.goto(p.url, { waitUntil: p.waitUntil || 'load' }); break;
    case 'fill': await page.fill(p.selector, p.value); break;
    case 'selectOption': await page.selectOption(p.selector, p.options.map(o => o.valueOrLabel)); break;
    case 'press': await page.press(p.selector, p.key); break;
    case 'waitForSelector': await page.waitForSelector(p.selector, { state: p.state || 'visible' }); break;
    case 'mouseWheel': await page.mouse.wheel(p.deltaX, p.deltaY); break;
    case 'screenshot': await page.screenshot({ type: 'png' }); break;
    case 'click': await page.click(p.selector); break;
    case 'waitForLoadState': await page.waitForLoadState(p.state || 'load'); break;
    default: throw new Error('no mapping for ' + c.method);
  }
  const lat = performance.now() - s;
  steps.push({ method: c.method, latency_ms: lat, browser_cpu_ms: treeCpuMs(bpid) - cpuB });
}
const browserCpuAll = treeCpuMs(bpid);
await browser.close();
const cpu = process.cpuUsage(cpu0);
fs.writeFileSync(outPath, JSON.stringify({
  start_ms: startMs, steps, node_cpu_ms: (cpu.user + cpu.system) / 1000,
  browser_cpu_total_ms: browserCpuAll, wall_ms: performance.now() - t0,
}));

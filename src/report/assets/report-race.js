// report-race.js - the Overview's token race (data.race, html-results.c):
// the same requests streaming under naive and under the best policy side
// by side, replayed from their recorded token times, a clock per request
// all starting together. Play / pause and speed buttons; it starts paused
// when the system asks for reduced motion. The lanes are drawn in SVG; the
// clock is #race's data-t (ms), which the browser test reads.

const RACE_SPEEDS = [0.5, 1, 2, 5, 10, 20, 50, 100, 500];

// A lane's token times (µs gaps) as cumulative ms.
function raceTimes(gaps) {
  const out = [];
  let us = 0;
  for (const g of gaps) { us += g; out.push(us / 1000); }
  return out;
}

// How many of the sorted times are at or before t.
function raceCount(times, t) {
  let lo = 0, hi = times.length;
  while (lo < hi) { const mid = (lo + hi) >> 1; if (times[mid] <= t) lo = mid + 1; else hi = mid; }
  return lo;
}

function racePanel(title, lanes, side, end) {
  const W = 500, L = 180, R = 60, rowH = 24, T = 26, H = T + rowH * lanes.length + 8;
  const svg = el("svg:svg", { class: "race-svg", viewBox: `0 0 ${W} ${H}`, role: "img",
                              "aria-label": `token race: ${title}` });
  svg.appendChild(el("svg:text", { class: "title", x: 4, y: 16 }, title));
  const bars = lanes.map((lane, i) => {
    const y = T + rowH * i;
    const id = lane.id.length > 24 ? lane.id.slice(0, 23) + "…" : lane.id;
    svg.appendChild(el("svg:text", { x: 4, y: y + 15 }, id));
    svg.appendChild(el("svg:rect", { class: "race-track", x: L, y: y + 4, width: W - L - R, height: rowH - 8 }));
    const bar = el("svg:rect", { class: `race-bar ${side}`, x: L, y: y + 4, width: 0, height: rowH - 8 });
    const label = el("svg:text", { class: "tick", x: W - R + 4, y: y + 15 }, "");
    bar.appendChild(el("svg:title", {}, `${lane.id}: ${lane[side].length} token times, last at ` +
                        `${(raceTimes(lane[side]).at(-1) / 1000).toFixed(2)} s`));
    svg.append(bar, label);
    return { bar, label, times: raceTimes(lane[side]), out: lane.out };
  });
  const update = t => {
    for (const b of bars) {
      const k = raceCount(b.times, t), n = b.times.length;
      b.bar.setAttribute("width", ((W - L - R) * k / n).toFixed(1));
      const tokens = b.out > 0 ? Math.round(b.out * k / n) : k;
      b.label.textContent = k === n ? `${(b.times[n - 1] / 1000).toFixed(2)} s` : `${tokens} tok`;
    }
  };
  return { svg, update, end };
}

function tokenRace() {
  const r = data.race, box = document.getElementById("race");
  if (!r || !box || !r.lanes.length) return;
  const endA = Math.max(...r.lanes.map(l => raceTimes(l.a).at(-1)));
  const endB = Math.max(...r.lanes.map(l => raceTimes(l.b).at(-1)));
  const end = Math.max(endA, endB, 1);
  const a = racePanel(r.a, r.lanes, "a", endA), b = racePanel(r.b, r.lanes, "b", endB);
  const reduce = window.matchMedia && window.matchMedia("(prefers-reduced-motion: reduce)").matches;
  // The speed that plays the race in about 8 s.
  let speed = RACE_SPEEDS.find(s => end / s <= 8000) ?? RACE_SPEEDS.at(-1);
  const play = el("button", { type: "button", class: "race-play" });
  const clock = el("span", { class: "race-clock muted" });
  const speeds = RACE_SPEEDS.map(s => {
    const btn = el("button", { type: "button", class: "race-speed", "data-speed": String(s) }, `${s}×`);
    btn.addEventListener("click", () => { speed = s; mark(); });
    return btn;
  });
  const mark = () => speeds.forEach(btn => btn.setAttribute("aria-pressed", String(Number(btn.dataset.speed) === speed)));
  const controls = el("div", { class: "race-controls" });
  controls.append(play, ...speeds, clock);
  const panels = el("div", { class: "race-panels" });
  panels.append(a.svg, b.svg);
  box.insertBefore(panels, box.querySelector("table"));
  box.insertBefore(controls, panels);
  let t = 0, playing = false, last = 0;
  const show = () => {
    a.update(t); b.update(t);
    clock.textContent = `t = ${(t / 1000).toFixed(2)} s of ${(end / 1000).toFixed(2)} s, ${speed}×`;
    box.dataset.t = String(Math.round(t));
    box.dataset.playing = playing ? "1" : "0";
    play.textContent = playing ? "pause" : t >= end ? "replay" : "play";
  };
  const frame = now => {
    if (!playing) return;
    t = Math.min(end, t + (now - last) * speed);
    last = now;
    if (t >= end) playing = false;
    show();
    if (playing) requestAnimationFrame(frame);
  };
  play.addEventListener("click", () => {
    if (playing) { playing = false; show(); return; }
    if (t >= end) t = 0;
    playing = true;
    last = performance.now();
    show();
    requestAnimationFrame(frame);
  });
  mark();
  show();
  if (!reduce) play.click();
}

SECTIONS.push(tokenRace);

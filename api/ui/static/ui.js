// hoox operator page: the two live parts. Everything else works without it.
"use strict";

// Traces: poll the rows every 2 s and swap them in when they changed.
function liveTraces() {
  const live = document.getElementById("live");
  const body = document.getElementById("trace-rows");
  if (!live || !body) return;
  const status = live.querySelector("[data-live-status]");
  const url = live.dataset.rows;
  let last = body.innerHTML;
  const seen = () => new Set([...body.querySelectorAll("tr[data-id]")].map((r) => r.dataset.id));
  const tick = async () => {
    if (document.hidden) return;
    try {
      const res = await fetch(url, { credentials: "same-origin", headers: { Accept: "text/html" } });
      if (res.status === 401) {
        status.className = "off";
        status.innerHTML = 'Session ended: <a href="/ui/login?next=/ui/">log in again</a>.';
        clearInterval(timer);
        return;
      }
      if (!res.ok) throw new Error(res.status);
      const html = await res.text();
      if (html !== last) {
        const before = seen();
        body.innerHTML = html;
        last = html;
        body.querySelectorAll("tr[data-id]").forEach((r) => { if (!before.has(r.dataset.id)) r.classList.add("fresh"); });
      }
      status.className = "on";
      status.textContent = "Live, updated " + new Date().toLocaleTimeString();
    } catch (e) {
      status.className = "off";
      status.textContent = "Live updates paused (" + e.message + "); retrying";
    }
  };
  status.className = "on";
  status.textContent = "Live";
  const timer = setInterval(tick, 2000);
}

// Stats: draw the per-minute chart as SVG from /ui/stats.json.
const colours = { signals: "#1f5fbf", duplicates: "#a15c00", rejections: "#b3261e", reconciles: "#7b3fb8" };

function svg(tag, attrs, parent) {
  const el = document.createElementNS("http://www.w3.org/2000/svg", tag);
  for (const k in attrs) el.setAttribute(k, attrs[k]);
  if (parent) parent.appendChild(el);
  return el;
}

async function drawChart() {
  const fig = document.getElementById("chart");
  if (!fig) return;
  const res = await fetch(fig.dataset.src, { credentials: "same-origin" });
  if (!res.ok) { fig.textContent = "Chart unavailable (" + res.status + ")."; return; }
  const data = await res.json();
  const names = data.series_order;
  const n = data.series[names[0]].length;
  const W = 900, H = 260, L = 40, B = 24, T = 8, R = 8;
  let max = 1;
  names.forEach((s) => data.series[s].forEach((v) => { if (v > max) max = v; }));
  const x = (i) => L + (i / Math.max(n - 1, 1)) * (W - L - R);
  const y = (v) => T + (1 - v / max) * (H - T - B);
  fig.replaceChildren();
  const root = svg("svg", { viewBox: `0 0 ${W} ${H}`, role: "img", "aria-label": "events per minute, UTC" }, fig);
  for (let k = 0; k <= 4; k++) {
    const v = Math.round((max * k) / 4);
    svg("line", { x1: L, x2: W - R, y1: y(v), y2: y(v), stroke: "#e3e7ee" }, root);
    svg("text", { x: L - 4, y: y(v) + 4, "text-anchor": "end", "font-size": 11, fill: "#5b6475" }, root).textContent = v;
  }
  const start = new Date(data.start).getTime();
  for (let k = 0; k <= 4; k++) {
    const i = Math.round(((n - 1) * k) / 4);
    const t = new Date(start + i * data.step_seconds * 1000);
    const label = t.toISOString().slice(11, 16);
    const anchor = k === 0 ? "start" : k === 4 ? "end" : "middle";
    svg("text", { x: x(i), y: H - 6, "text-anchor": anchor, "font-size": 11, fill: "#5b6475" }, root).textContent = label;
  }
  names.forEach((s) => {
    const pts = data.series[s].map((v, i) => `${x(i).toFixed(1)},${y(v).toFixed(1)}`).join(" ");
    svg("polyline", { points: pts, fill: "none", stroke: colours[s] || "#333", "stroke-width": 1.6 }, root);
  });
  const legend = document.createElement("div");
  legend.className = "legend";
  names.forEach((s) => {
    const total = data.series[s].reduce((a, b) => a + b, 0);
    const item = document.createElement("span");
    item.style.setProperty("--c", colours[s] || "#333");
    item.textContent = `${s} (${total})`;
    legend.appendChild(item);
  });
  fig.appendChild(legend);
}

// Orders and trace pages: while an order shown is open, its follow job may
// record a fill at any moment; reload every 5 s (while visible) so the
// status, fills, average price and fee shown stay live.
function followOpenOrders() {
  if (!document.querySelector("[data-follow] .s-open")) return;
  setInterval(() => { if (!document.hidden) location.reload(); }, 5000);
}

document.addEventListener("DOMContentLoaded", () => {
  liveTraces();
  followOpenOrders();
  drawChart().catch((e) => { const f = document.getElementById("chart"); if (f) f.textContent = "Chart unavailable: " + e.message; });
  setInterval(() => { if (!document.hidden) drawChart().catch(() => {}); }, 30000);
});

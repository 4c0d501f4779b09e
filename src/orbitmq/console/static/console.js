// OrbitMQ console: live line charts polled from the console's JSON endpoints, and tabs.
// Hand-written and shipped in the package: the page loads nothing from elsewhere.
"use strict";

const POLL_MS = 2000;
const KEEP_POINTS = 90;
const COLORS = ["#2563eb", "#dc2626", "#16a34a", "#9333ea", "#ea580c", "#0891b2"];

function drawChart(canvas, history) {
  const ctx = canvas.getContext("2d");
  const w = canvas.width, h = canvas.height, pad = 36;
  ctx.clearRect(0, 0, w, h);
  const names = Object.keys(history.series);
  let max = 1;
  for (const name of names) for (const v of history.series[name]) max = Math.max(max, v);
  ctx.strokeStyle = "#ccc";
  ctx.fillStyle = "#555";
  ctx.font = "11px sans-serif";
  ctx.beginPath();
  ctx.moveTo(pad, 8); ctx.lineTo(pad, h - 20); ctx.lineTo(w - 8, h - 20);
  ctx.stroke();
  ctx.fillText(max.toFixed(max < 10 ? 1 : 0), 2, 14);
  ctx.fillText("0", 2, h - 20);
  const step = (w - pad - 8) / (KEEP_POINTS - 1);
  names.forEach((name, i) => {
    const values = history.series[name];
    ctx.strokeStyle = COLORS[i % COLORS.length];
    ctx.beginPath();
    values.forEach((v, j) => {
      const x = pad + (KEEP_POINTS - values.length + j) * step;
      const y = h - 20 - (v / max) * (h - 30);
      if (j === 0) ctx.moveTo(x, y); else ctx.lineTo(x, y);
    });
    ctx.stroke();
    ctx.fillStyle = ctx.strokeStyle;
    const last = values.length ? values[values.length - 1] : 0;
    ctx.fillText(name + ": " + (Number.isInteger(last) ? last : last.toFixed(1)), pad + 8 + i * 150, h - 4);
  });
}

async function poll(canvas, history) {
  try {
    const response = await fetch(canvas.dataset.source, {headers: {Accept: "application/json"}});
    if (!response.ok) throw new Error(response.status + " " + response.statusText);
    const data = await response.json();
    for (const [name, value] of Object.entries(data.series)) {
      const values = history.series[name] || (history.series[name] = []);
      values.push(value);
      if (values.length > KEEP_POINTS) values.shift();
      for (const el of document.querySelectorAll('[data-live="' + CSS.escape(name) + '"]')) {
        el.textContent = String(value);
      }
    }
    canvas.title = "updated " + new Date(data.time_ms).toLocaleTimeString();
    canvas.classList.remove("stale");
  } catch (err) {
    // A broker down or the console restarting: keep the chart, mark it, try again later.
    canvas.classList.add("stale");
    canvas.title = "not updated: " + err.message;
  }
  drawChart(canvas, history);
  canvas.dataset.polls = String(Number(canvas.dataset.polls || 0) + 1);
}

function startChart(canvas) {
  const history = {series: {}};
  poll(canvas, history);
  setInterval(() => poll(canvas, history), POLL_MS);
}

function startTabs(bar) {
  for (const button of bar.querySelectorAll("button[data-tab]")) {
    button.addEventListener("click", () => {
      for (const other of bar.querySelectorAll("button[data-tab]")) {
        other.classList.toggle("active", other === button);
        document.getElementById(other.dataset.tab).hidden = other !== button;
      }
    });
  }
}

document.addEventListener("DOMContentLoaded", () => {
  document.querySelectorAll("canvas.chart[data-source]").forEach(startChart);
  document.querySelectorAll("[data-tabs]").forEach(startTabs);
});

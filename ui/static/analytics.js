// The analytics page's charts, drawn with Chart.js (served from /static) from /api/stats. The
// tables beside them hold the same figures, so the page reads without JavaScript too.
"use strict";

(function () {
  const COLORS = ["#2f6fde", "#d9822b", "#2e9e5b", "#c23b3b", "#7a52c7", "#5a6b7b"];

  function chart(id, type, labels, datasets, options = {}) {
    const canvas = document.getElementById(id);
    if (!canvas || !window.Chart) return;
    new window.Chart(canvas, {
      type,
      data: {
        labels,
        datasets: datasets.map((set, index) => ({
          backgroundColor: COLORS[index % COLORS.length],
          borderColor: COLORS[index % COLORS.length],
          ...set,
        })),
      },
      options: { animation: false, responsive: true, maintainAspectRatio: false, ...options },
    });
    canvas.closest(".stats-section").classList.add("charted");
  }

  function draw(stats) {
    const days = stats.per_day;
    chart("chart-days", "line", days.map((d) => d.day), [
      { label: "median (s)", data: days.map((d) => d.median_seconds) },
      { label: "p90 (s)", data: days.map((d) => d.p90_seconds) },
    ]);
    const tools = stats.per_tool;
    chart(
      "chart-tools",
      "bar",
      tools.map((t) => t.tool),
      [{ label: "approval rate (%)", data: tools.map((t) => (t.approval_rate === null ? null : Math.round(100 * t.approval_rate))) }],
      { scales: { y: { min: 0, max: 100 } } },
    );
    const people = stats.per_person;
    chart("chart-people", "bar", people.map((p) => `${p.person} (${p.door})`), [
      { label: "decisions", data: people.map((p) => p.decisions) },
    ]);
    chart("chart-undecided", "bar", tools.map((t) => t.tool), [
      { label: "expired", data: tools.map((t) => t.expired) },
      { label: "escalated", data: tools.map((t) => t.escalated) },
    ]);
    const slowest = stats.slowest_tools;
    chart(
      "chart-slowest",
      "bar",
      slowest.map((t) => t.tool),
      [{ label: "median seconds to a decision", data: slowest.map((t) => t.median_seconds) }],
      { indexAxis: "y" },
    );
    document.body.dataset.charted = "yes";
  }

  async function load() {
    const response = await fetch(document.body.dataset.stats, { credentials: "same-origin" });
    if (response.ok) draw(await response.json());
  }

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", load);
  else load();
})();

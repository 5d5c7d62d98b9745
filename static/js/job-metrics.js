// The job page's resource charts: polls the job's samples while it runs and redraws.
(function () {
  "use strict";
  const box = document.getElementById("job-metrics");
  if (!box || typeof Chart === "undefined" || !window.Portal) return;
  const charts = {};

  function line(canvasId, datasets, labels, yTitle) {
    const config = {
      type: "line",
      data: { labels: labels, datasets: datasets },
      options: {
        animation: false,
        responsive: true,
        interaction: { mode: "index", intersect: false },
        elements: { point: { radius: 0 } },
        scales: { x: { ticks: { maxTicksLimit: 6 } }, y: { beginAtZero: true, title: { display: true, text: yTitle } } },
      },
    };
    if (charts[canvasId]) {
      charts[canvasId].data = config.data;
      charts[canvasId].update();
    } else {
      charts[canvasId] = new Chart(document.getElementById(canvasId), config);
    }
  }

  function draw(series) {
    // The one time rule: the viewer's zone (the page's), 24-hour ISO style.
    const labels = series.time.map((t) => window.Portal.zoned(t, box.dataset.tz).slice(11, 19));
    const some = series.time.length > 0;
    document.getElementById("job-metrics-empty").hidden = some;
    document.getElementById("job-metrics-charts").hidden = !some;
    box.dataset.samples = String(series.time.length);
    if (!some) return; // no empty axes: the charts appear with the first sample
    line("chart-cpu-mem", [
      { label: "CPU %", data: series.cpuPercent },
      { label: "Memory MB", data: series.memoryMb },
    ], labels, "CPU % / MB");
    line("chart-net", [
      { label: "Received kB/s", data: series.netRxKbps },
      { label: "Sent kB/s", data: series.netTxKbps },
    ], labels, "kB/s");
    const gpus = Object.entries(series.gpus || {});
    document.getElementById("chart-gpu-box").hidden = gpus.length === 0;
    if (gpus.length) {
      const sets = [];
      for (const [index, g] of gpus) {
        sets.push({ label: "GPU " + index + " %", data: g.percent });
        sets.push({ label: "GPU " + index + " memory MB", data: g.memoryUsedMb, hidden: true });
      }
      line("chart-gpu", sets, labels, "%");
    }
  }

  function load() {
    fetch(box.dataset.url, { credentials: "same-origin", headers: { Accept: "application/json" } })
      .then((r) => (r.ok ? r.json() : null))
      .then((series) => { if (series) draw(series); })
      .catch(() => {});
  }

  load();
  if (box.dataset.live) setInterval(load, 15000);
})();

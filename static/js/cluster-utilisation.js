// Live > Clusters: what the chosen cluster's jobs used over time (GET .../utilisation/).
(function () {
  "use strict";
  const box = document.getElementById("cluster-utilisation");
  if (!box || typeof Chart === "undefined") return;
  const cluster = document.getElementById("utilisation-cluster");
  const hours = document.getElementById("utilisation-hours");
  let chart = null;

  function draw(series) {
    const labels = series.time.map((t) => t.slice(5, 16).replace("T", " "));
    const data = {
      labels: labels,
      datasets: [
        { label: "GPUs held", data: series.gpusHeld },
        { label: "GPUs busy", data: series.gpusBusy },
        { label: "CPU cores busy", data: series.cpuCores },
        { label: "Memory GB", data: series.memoryGb, hidden: true },
      ],
    };
    box.dataset.buckets = String(series.time.length);
    if (chart) {
      chart.data = data;
      chart.update();
      return;
    }
    chart = new Chart(document.getElementById("chart-cluster-utilisation"), {
      type: "line",
      data: data,
      options: {
        animation: false,
        interaction: { mode: "index", intersect: false },
        elements: { point: { radius: 0 } },
        scales: { x: { ticks: { maxTicksLimit: 8 } }, y: { beginAtZero: true } },
      },
    });
  }

  function load() {
    fetch(cluster.value + "?hours=" + hours.value, { credentials: "same-origin", headers: { Accept: "application/json" } })
      .then((r) => (r.ok ? r.json() : null))
      .then((series) => { if (series) draw(series); })
      .catch(() => {});
  }

  cluster.addEventListener("change", load);
  hours.addEventListener("change", load);
  load();
  setInterval(load, 60000);
})();

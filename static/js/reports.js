// Reports: GPU-hours, CPU-hours and borrowed GPU-hours of the heaviest rows (the table below
// has every row and the same numbers).
(function () {
  "use strict";
  const canvas = document.getElementById("report-chart");
  const source = document.getElementById("report-chart-data");
  if (!canvas || !source || typeof Chart === "undefined") return;
  const data = JSON.parse(source.textContent);
  canvas.dataset.rows = String(data.labels.length);
  new Chart(canvas, {
    type: "bar",
    data: {
      labels: data.labels,
      datasets: [
        { label: "GPU-hours", data: data.gpu_hours },
        { label: "CPU-hours", data: data.cpu_hours, hidden: true },
        { label: "Borrowed GPU-hours", data: data.borrowed_gpu_hours },
      ],
    },
    options: {
      animation: false,
      interaction: { mode: "index", intersect: false },
      scales: { y: { beginAtZero: true } },
    },
  });
  canvas.dataset.drawn = "1";
})();

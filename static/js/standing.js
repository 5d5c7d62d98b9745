/* Create Job: the caller's standing for the chosen project and the job being written
   (templates/quotas/_standing.html), from GET /api/portal/quotas/standing. Asked again as the
   fields or the JSON document change: debounced, only when the job's size or project changed,
   and an older answer never overwrites a newer one. The document is what gets submitted, so its
   values win; the fields are read while it does not parse. */
(function () {
  "use strict";

  var DEBOUNCE_MS = 400;
  /* Changes no event announces (an example or an uploaded file written into the editor). */
  var RECHECK_MS = 2000;
  var LIMITS = [
    ["gpus", "GPUs at once", "held", ""],
    ["jobs", "Jobs at once", "running", ""],
    ["gpu_hours", "GPU-hours this month", "used", " h"],
    ["cpu_hours", "CPU-hours this month", "used", " h"],
    ["mem_gb_hours", "Memory GB-hours this month", "used", " GB·h"]
  ];

  var box = document.getElementById("quota-standing");
  var form = document.getElementById("job-form");
  if (!box || !form) return;
  var url = box.getAttribute("data-url");
  var fit = document.getElementById("standing-fit");
  var mayUse = document.getElementById("standing-may-use");
  var list = document.getElementById("standing-limits");
  var editor = document.getElementById("id_document");
  var timer = null;
  var lastKey = null;
  var asked = 0;
  var controller = null;

  function fieldValue(name) {
    var el = form.querySelector('[name="' + name + '"]');
    return el ? String(el.value).trim() : "";
  }

  function documentValues() {
    var doc;
    try { doc = JSON.parse(editor ? editor.value : ""); } catch (e) { return null; }
    if (!doc || typeof doc !== "object" || !doc.request) return null;
    var resources = doc.request.resources || {};
    var scheduling = doc.request.scheduling || {};
    return {
      gpus: resources.gpus,
      cpus: resources.cpus,
      memory_gb: resources.cpuMemoryGb,
      max_duration: scheduling.maxDuration
    };
  }

  function query() {
    var select = form.querySelector('[name="project"]');
    var project = select && select.selectedIndex >= 0 ? select.options[select.selectedIndex].text : "";
    if (!project) return null;
    var doc = documentValues() || {};
    var params = new URLSearchParams();
    params.set("project", project);
    [["gpus", "gpus"], ["cpus", "cpus"], ["memory_gb", "cpu_memory_gb"], ["max_duration", "max_duration"]].forEach(function (pair) {
      var value = doc[pair[0]];
      value = value === undefined || value === null ? fieldValue(pair[1]) : String(value);
      if (value !== "") params.set(pair[0], value);
    });
    return params.toString();
  }

  function number(value) { return String(Math.round(value * 10) / 10); }

  function say(text, fits, tone) {
    fit.textContent = text;
    fit.setAttribute("data-fits", fits);
    fit.className = "mb-2 " + (tone ? "text-" + tone + "-emphasis fw-medium" : "");
  }

  function scopeTitle(row, user) {
    if (row.scope === "member") return "You (" + user + ") in project " + row.project;
    if (row.scope === "user") return "You (" + user + "), in every project";
    return "Project " + row.project + " (all its members)";
  }

  function limitItem(level, label, counted, unit) {
    var value = level[counted] || 0;
    var text = label + ": " + number(value) + unit + " " + counted;
    if (level.hard !== null) text += " of " + number(level.hard);
    if (level.soft !== null) text += " (soft " + number(level.soft) + ")";
    if (level.running_may_use) text += "; running jobs may use " + number(level.running_may_use) + " more";
    var item = document.createElement("div");
    item.className = "mt-1";
    var line = document.createElement("div");
    line.textContent = text;
    var scale = level.hard !== null ? level.hard : level.soft;
    var meter = document.createElement("div");
    meter.className = "meter";
    if (level.hard !== null && value >= level.hard) meter.className += " high";
    else if (level.soft !== null && value > level.soft) meter.className += " mid";
    meter.setAttribute("role", "img");
    meter.setAttribute("aria-label", text);
    var bar = document.createElement("div");
    bar.style.width = (scale ? Math.min(100, 100 * value / scale) : 100) + "%";
    meter.appendChild(bar);
    item.appendChild(line);
    item.appendChild(meter);
    return item;
  }

  function show(answer) {
    var job = answer.job;
    var rows = answer.limits || [];
    if (!rows.length) {
      say("No limit applies to you in project " + answer.project + ": this job fits.", "now", "success");
    } else if (job.fits_now) {
      say("Fits your limits: it may start now.", "now", "success");
    } else if (!job.fits_ever) {
      say("Never fits your limits (refused at submit): " + job.reason + ".", "never", "danger");
    } else {
      say("Does not fit your limits now, so it would wait: " + job.reason + ".", "later", "warning");
    }
    var duration = window.Portal ? window.Portal.duration(job.max_duration_s) : job.max_duration_s + " s";
    mayUse.textContent = "At most (maxDuration " + duration + "): " +
      number(job.may_use.gpu_hours) + " GPU-hours (" + job.gpus + " GPU" + (job.gpus === 1 ? "" : "s") + "), " +
      number(job.may_use.cpu_hours) + " CPU-hours, " + number(job.may_use.mem_gb_hours) + " memory GB-hours.";
    mayUse.hidden = false;
    list.textContent = "";
    rows.forEach(function (row) {
      var item = document.createElement("li");
      item.className = "mb-2";
      item.setAttribute("data-scope", row.scope);
      var title = document.createElement("div");
      title.className = "fw-medium";
      title.textContent = scopeTitle(row, answer.user);
      item.appendChild(title);
      LIMITS.forEach(function (spec) {
        var level = row[spec[0]];
        if (level && (level.hard !== null || level.soft !== null)) {
          item.appendChild(limitItem(level, spec[1], spec[2], spec[3]));
        }
      });
      list.appendChild(item);
    });
    list.hidden = !rows.length;
  }

  function ask() {
    var key = query();
    if (key === null || key === lastKey) return;
    lastKey = key;
    var mine = ++asked;
    if (controller) controller.abort();
    controller = window.AbortController ? new AbortController() : null;
    fetch(url + "?" + key, {
      credentials: "same-origin",
      headers: { Accept: "application/json" },
      signal: controller ? controller.signal : undefined
    }).then(function (response) {
      return response.json().then(function (body) { return { ok: response.ok, body: body }; });
    }).then(function (answer) {
      if (mine !== asked) return;
      if (answer.ok) { show(answer.body); return; }
      var body = answer.body || {};
      var why = (body.errors && body.errors.join("; ")) || body.error || "cannot be read";
      say("Your limits cannot be checked for this job: " + why + ".", "", "secondary");
      mayUse.hidden = true;
      list.hidden = true;
    }).catch(function (error) {
      if ((error && error.name === "AbortError") || mine !== asked) return;
      /* Asked again at the next change, not every recheck: a failing server gets no stream. */
      say("Your limits cannot be checked right now.", "", "secondary");
      mayUse.hidden = true;
      list.hidden = true;
    });
  }

  function soon() {
    clearTimeout(timer);
    timer = setTimeout(ask, DEBOUNCE_MS);
  }

  form.addEventListener("input", soon);
  form.addEventListener("change", soon);
  setInterval(function () { if (document.visibilityState === "visible") ask(); }, RECHECK_MS);
  say("Checking your limits…", "", "");
  ask();
})();

/* GPU Portal: small enhancements. Every page works without this file. */
(function () {
  "use strict";

  /* The one time helper (the pages' rule, see accounts/timezones.py): the server renders every
     time in the user's zone, labelled ("2026-11-22 14:05 CET", the absolute time with seconds
     in the title); this keeps relative ones ("in 3 h", "12 min ago") and running durations
     ("23s", "1h 04m") current, and saves the browser's zone once when none is saved yet. */
  function relative(date, now) {
    var seconds = Math.round((date.getTime() - (now || Date.now())) / 1000);
    var abs = Math.abs(seconds);
    var text;
    if (abs < 45) text = "a few seconds";
    else if (abs < 5400) text = Math.round(abs / 60) + " min";
    else if (abs < 129600) text = Math.round(abs / 3600) + " h";
    else text = Math.round(abs / 86400) + " days";
    return seconds <= 0 ? text + " ago" : "in " + text;
  }

  function pad2(n) { return String(n).padStart(2, "0"); }

  /* Same text as the template filter "duration": 1d 2h, 3h 04m, 5m 06s, 7s. */
  function duration(seconds) {
    seconds = Math.max(0, Math.floor(seconds));
    var days = Math.floor(seconds / 86400), hours = Math.floor(seconds % 86400 / 3600);
    var minutes = Math.floor(seconds % 3600 / 60), secs = seconds % 60;
    if (days) return hours ? days + "d " + hours + "h" : days + "d";
    if (hours) return minutes ? hours + "h " + pad2(minutes) + "m" : hours + "h";
    if (minutes) return minutes + "m " + pad2(secs) + "s";
    return secs + "s";
  }

  function refreshTimes(root) {
    var scope = root && root.querySelectorAll ? root : document;
    var now = Date.now();
    var items = Array.prototype.slice.call(scope.querySelectorAll('time[data-style="relative"]'));
    if (scope.matches && scope.matches('time[data-style="relative"]')) items.push(scope);
    items.forEach(function (el) {
      var date = new Date(el.getAttribute("datetime"));
      if (!isNaN(date.getTime())) el.textContent = relative(date, now);
    });
    /* <span data-running-since="ISO" data-base-seconds="N">: N + the time since ISO. */
    scope.querySelectorAll("[data-running-since]").forEach(function (el) {
      var since = new Date(el.getAttribute("data-running-since"));
      if (isNaN(since.getTime())) return;
      var base = parseInt(el.getAttribute("data-base-seconds") || "0", 10);
      el.textContent = duration(base + (now - since.getTime()) / 1000);
    });
  }

  function csrfToken() {
    try {
      return JSON.parse(document.body.getAttribute("hx-headers") || "{}")["X-CSRFToken"] || "";
    } catch (e) {
      return "";
    }
  }

  function saveDetectedZone() {
    var link = document.getElementById("nav-zone");
    if (!link || link.getAttribute("data-zone-saved") !== "0") return;
    var zone;
    try { zone = Intl.DateTimeFormat().resolvedOptions().timeZone; } catch (e) { return; }
    if (!zone) return;
    var body = new URLSearchParams({ time_zone: zone, detected: "1" });
    fetch(link.getAttribute("data-zone-url"), {
      method: "POST",
      body: body,
      credentials: "same-origin",
      headers: { "X-CSRFToken": csrfToken() },
    }).then(function (response) { return response.json(); }).then(function (answer) {
      if (!answer.ok) return;
      link.setAttribute("data-zone-saved", "1");
      link.lastChild.textContent = answer.zone;
      link.setAttribute("data-zone-detected", answer.saved ? "1" : "0");
    }).catch(function () { /* the next page tries again */ });
  }

  // An ISO time in a zone, printed 24-hour ISO style ("2026-11-22 14:05:00"; "sv-SE" is the
  // locale that prints it so): what scripts draw follows the one time rule too.
  function zoned(iso, zone) {
    try {
      return new Date(iso).toLocaleString("sv-SE", { timeZone: zone || undefined, hour12: false });
    } catch (e) {
      return iso.replace("T", " ");
    }
  }

  window.Portal = { relative: relative, duration: duration, refreshTimes: refreshTimes, zoned: zoned };

  /* Confirmation dialog for forms with data-confirm (the server asks again without JS). */
  function confirmThen(form, proceed) {
    var modalEl = document.getElementById("confirm-modal");
    var question = form.getAttribute("data-confirm");
    if (!modalEl || !window.bootstrap) {
      if (window.confirm(question)) proceed();
      return;
    }
    modalEl.querySelector(".modal-body p").textContent = question;
    var button = modalEl.querySelector("[data-confirm-ok]");
    button.textContent = form.getAttribute("data-confirm-label") || "Confirm";
    button.className = "btn btn-" + (form.getAttribute("data-confirm-style") || "primary");
    /* #action-cancel's dialog confirms with #confirm-cancel, as the page without JS does. */
    var trigger = form.querySelector("button[type=submit][id]");
    button.id = trigger ? "confirm-" + trigger.id.replace(/^action-/, "") : "confirm-ok";
    var modal = window.bootstrap.Modal.getOrCreateInstance(modalEl);
    button.onclick = function () {
      button.disabled = true;
      proceed();
    };
    modalEl.addEventListener("hidden.bs.modal", function () { button.disabled = false; }, { once: true });
    modal.show();
  }

  document.addEventListener("submit", function (event) {
    var form = event.target;
    if (!form.matches || !form.matches("form[data-confirm]")) return;
    if (form.querySelector("input[name=confirmed]")) return;
    event.preventDefault();
    var action = form.getAttribute("action");
    var token = form.querySelector("[name=csrfmiddlewaretoken]");
    token = token ? token.value : "";
    confirmThen(form, function () {
      /* A fresh form: live parts may have replaced the original while the dialog was open. */
      var post = document.createElement("form");
      post.method = "post";
      post.action = action;
      post.hidden = true;
      [["csrfmiddlewaretoken", token], ["confirmed", "1"]].forEach(function (pair) {
        var input = document.createElement("input");
        input.type = "hidden";
        input.name = pair[0];
        input.value = pair[1];
        post.appendChild(input);
      });
      document.body.appendChild(post);
      post.submit();
    });
  });

  /* Jobs table: "select all" and the count of selected jobs for the bulk actions. */
  function countSelected(form) {
    var count = form.querySelectorAll("input[name=jobs]:checked").length;
    /* A sweep's row selects every job of it (templates/jobs/_sweep_group_row.html). */
    form.querySelectorAll("input[name=sweeps]:checked").forEach(function (box) {
      var row = box.closest("[data-sweep-count]");
      count += row ? parseInt(row.getAttribute("data-sweep-count"), 10) || 0 : 0;
    });
    var label = form.querySelector("#bulk-count");
    if (label) label.textContent = count + " selected";
    var submit = form.querySelector("#bulk-submit");
    if (submit) submit.disabled = count === 0;
  }
  document.addEventListener("change", function (event) {
    var box = event.target;
    var form = box.closest ? box.closest("#bulk-form") : null;
    if (!form) return;
    if (box.matches("[data-select-all]")) {
      form.querySelectorAll("input[name=jobs], input[name=sweeps]").forEach(function (each) { each.checked = box.checked; });
    }
    countSelected(form);
  });
  function initBulk(root) {
    var form = (root && root.querySelector) ? (root.id === "bulk-form" ? root : root.querySelector("#bulk-form")) : null;
    if (form) countSelected(form);
  }

  /* Copy buttons: <button data-copy="#element-id">. */
  document.addEventListener("click", function (event) {
    var button = event.target.closest ? event.target.closest("[data-copy]") : null;
    if (!button) return;
    var source = document.querySelector(button.getAttribute("data-copy"));
    if (!source || !navigator.clipboard) return;
    navigator.clipboard.writeText(source.value || source.textContent.trim()).then(function () {
      var old = button.textContent;
      button.textContent = "Copied";
      setTimeout(function () { button.textContent = old; }, 1500);
    });
  });

  /* The job log follows new output while the reader is at the bottom. */
  var followLog = true;
  function logBox() { return document.getElementById("job-log"); }
  function scrollLog() {
    var box = logBox();
    if (box && followLog) box.scrollTop = box.scrollHeight;
  }
  function watchLog() {
    var box = logBox();
    if (!box || box.getAttribute("data-watched")) return;
    box.setAttribute("data-watched", "1");
    box.addEventListener("scroll", function () {
      followLog = box.scrollTop + box.clientHeight >= box.scrollHeight - 24;
    });
    scrollLog();
  }

  document.addEventListener("DOMContentLoaded", function () {
    refreshTimes(document);
    initBulk(document);
    saveDetectedZone();
    watchLog();
    setInterval(function () { refreshTimes(document); }, 1000);
  });
  document.addEventListener("htmx:load", function (event) {
    refreshTimes(event.detail.elt);
    initBulk(event.detail.elt);
  });
  document.addEventListener("htmx:oobAfterSwap", function (event) {
    if (event.detail && event.detail.target && event.detail.target.id === "job-log-text") scrollLog();
  });
  /* "Job X submitted: queued." is true only while it waits: gone once the state moved on. */
  function dropStaleSubmitMessage() {
    var live = document.getElementById("job-live");
    if (!live) return;
    var state = live.getAttribute("data-state");
    if (state === "QUEUED" || state === "ONHOLD") return;
    document.querySelectorAll(".messages .alert").forEach(function (alert) {
      if (/ submitted.*: (queued|on hold)\.$/.test(alert.textContent.trim())) alert.remove();
    });
  }

  document.addEventListener("htmx:afterSettle", function () {
    watchLog();
    dropStaleSubmitMessage();
  });
})();

/* GPU Portal: small enhancements. Every page works without this file. */
(function () {
  "use strict";

  function pad(n) { return String(n).padStart(2, "0"); }

  function relative(date) {
    var seconds = Math.round((date.getTime() - Date.now()) / 1000);
    var abs = Math.abs(seconds);
    var text;
    if (abs < 45) text = "a few seconds";
    else if (abs < 5400) text = Math.round(abs / 60) + " min";
    else if (abs < 129600) text = Math.round(abs / 3600) + " h";
    else text = Math.round(abs / 86400) + " days";
    return seconds <= 0 ? text + " ago" : "in " + text;
  }

  /* <time datetime="...Z" title="... UTC"> -> the viewer's local time (the title keeps UTC). */
  function localise(root) {
    var scope = root && root.querySelectorAll ? root : document;
    var items = Array.prototype.slice.call(scope.querySelectorAll("time[datetime]"));
    if (scope.matches && scope.matches("time[datetime]")) items.push(scope);
    items.forEach(function (el) {
      var date = new Date(el.getAttribute("datetime"));
      if (isNaN(date.getTime())) return;
      var style = el.getAttribute("data-style") || "datetime";
      var day = date.getFullYear() + "-" + pad(date.getMonth() + 1) + "-" + pad(date.getDate());
      var clock = pad(date.getHours()) + ":" + pad(date.getMinutes());
      var text;
      if (style === "date") text = day;
      else if (style === "time") text = clock;
      else if (style === "relative") text = relative(date);
      else text = day + " " + clock;
      el.textContent = text;
      el.setAttribute("data-localised", "1");
    });
  }

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
    localise(document);
    watchLog();
    setInterval(function () {
      document.querySelectorAll('time[data-style="relative"]').forEach(function (el) {
        localise(el);
      });
    }, 30000);
  });
  document.addEventListener("htmx:load", function (event) { localise(event.detail.elt); });
  document.addEventListener("htmx:oobAfterSwap", function (event) {
    if (event.detail && event.detail.target && event.detail.target.id === "job-log-text") scrollLog();
  });
  document.addEventListener("htmx:afterSettle", function () { watchLog(); });
})();

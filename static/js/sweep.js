/* Create Job's Sweep section (templates/jobs/_sweep_form.html): shows the box of the chosen
   mode and previews the jobs in place, as the page's "Preview the jobs" button does without
   this file (the server renders the same fragment, jobs/_sweep_preview.html). */
(function () {
  "use strict";

  var form = document.getElementById("job-form");
  var section = document.getElementById("sweep");
  if (!form || !section) return;
  var result = document.getElementById("sweep-preview");
  var previewButton = document.getElementById("sweep-preview-button");
  var submit = document.getElementById("job-submit");
  var submitLabel = submit ? submit.textContent : "";
  var timer = null;
  var asked = 0;

  function mode() {
    var checked = form.querySelector("input[name=sweep_mode]:checked");
    return checked ? checked.value : "";
  }

  var editor = document.getElementById("id_document");

  /* A sweep document pasted whole ({"template", "variations"} or {"jobs"}) previews too. */
  function pasted() {
    try {
      var doc = JSON.parse(editor ? editor.value : "");
      return doc !== null && typeof doc === "object" && doc.request === undefined &&
        doc.jobDefinition === undefined &&
        (doc.template !== undefined || doc.variations !== undefined || doc.jobs !== undefined);
    } catch (e) {
      return false;
    }
  }

  function sweeping() { return Boolean(mode()) || pasted(); }

  function showMode() {
    var current = mode();
    section.querySelectorAll("[data-sweep-box]").forEach(function (box) {
      box.hidden = box.getAttribute("data-sweep-box") !== current;
    });
    previewButton.hidden = !sweeping();
    if (!sweeping()) result.innerHTML = "";
    if (submit && !result.querySelector("[data-count]")) submit.textContent = sweeping() ? "Submit sweep" : submitLabel;
  }

  function preview() {
    if (!sweeping()) return;
    var body = new FormData(form);
    body.delete("document_file");
    body.append("sweep_preview", "1");
    var mine = ++asked;
    result.setAttribute("aria-busy", "true");
    fetch(form.action, {
      method: "POST",
      body: body,
      headers: { "X-Requested-With": "fetch" },
      credentials: "same-origin"
    }).then(function (response) {
      if (!response.ok) throw new Error("the server answered " + response.status);
      return response.text();
    }).then(function (html) {
      if (mine !== asked) return;  /* a later preview is on its way */
      result.innerHTML = html;
      var count = result.querySelector("[data-count]");
      var n = count ? parseInt(count.getAttribute("data-count"), 10) : 0;
      if (submit && sweeping()) submit.textContent = n ? "Submit " + n + " job" + (n === 1 ? "" : "s") : "Submit sweep";
    }).catch(function (error) {
      result.textContent = "Could not preview: " + error.message;
    }).finally(function () {
      result.removeAttribute("aria-busy");
    });
  }

  function later() {
    clearTimeout(timer);
    timer = setTimeout(preview, 400);
  }

  form.querySelectorAll("input[name=sweep_mode]").forEach(function (radio) {
    radio.addEventListener("change", function () {
      showMode();
      if (mode()) later();
    });
  });
  section.querySelectorAll("textarea").forEach(function (box) { box.addEventListener("input", later); });
  if (editor) {
    editor.addEventListener("input", function () {
      showMode();
      if (sweeping()) later();
    });
  }
  previewButton.addEventListener("click", function (event) {
    event.preventDefault();
    clearTimeout(timer);
    preview();
  });
  showMode();
})();

// Accessibility fixes for Django's admin pages (WCAG 2.1 A/AA): names for the fields Django's
// widgets render without a label (tabular inline cells, split date/time, select2 boxes) and a
// role for the filter widgets' labelled icons. Re-applied as widgets render and rows are added.
"use strict";
(function () {
  function hasName(el) {
    return (el.labels && el.labels.length) || el.getAttribute("aria-label") ||
      el.getAttribute("aria-labelledby") || el.getAttribute("title");
  }
  function text(el) { return el ? el.textContent.replace(/\s+/g, " ").trim() : ""; }
  function columnName(cell) {
    var table = cell.closest("table");
    var headers = table ? table.querySelectorAll("thead th") : [];
    var header = headers[cell.cellIndex];
    return text(header);
  }
  function nameOf(field) {
    var cell = field.closest("td");
    if (cell && field.closest(".tabular")) {
      var row = field.closest("tr");
      return columnName(cell) + (row ? " (row " + (row.sectionRowIndex + 1) + ")" : "");
    }
    var box = field.closest(".fieldBox, .form-row, .flex-container");
    var label = box ? box.querySelector("label") : null;
    var name = text(label).replace(/:$/, "") || field.name;
    if (/_0$/.test(field.name) && field.closest(".datetime")) name += " (date)";
    if (/_1$/.test(field.name) && field.closest(".datetime")) name += " (time)";
    return name;
  }
  function fix() {
    document.querySelectorAll("input:not([type=hidden]), select, textarea").forEach(function (field) {
      if (!hasName(field)) field.setAttribute("aria-label", nameOf(field));
    });
    document.querySelectorAll("span.help-tooltip[aria-label]:not([role])").forEach(function (el) {
      el.setAttribute("role", "img");
    });
    document.querySelectorAll(".select2-selection[role=combobox]").forEach(function (box) {
      var container = box.closest(".select2");
      var select = container ? container.previousElementSibling : null;
      if (!select || select.tagName !== "SELECT") return;
      var name = (select.labels && select.labels.length) ? text(select.labels[0]).replace(/:$/, "") : nameOf(select);
      if (box.getAttribute("aria-label") !== name) {
        box.removeAttribute("aria-labelledby");
        box.setAttribute("aria-label", name);
      }
      var shown = box.querySelector(".select2-selection__rendered[role=textbox]");
      if (shown && shown.getAttribute("aria-label") !== name) shown.setAttribute("aria-label", name);
    });
  }
  var pending = false;
  var observer = new MutationObserver(function () {
    if (pending) return;
    pending = true;
    queueMicrotask(function () { observer.disconnect(); fix(); observe(); pending = false; });
  });
  function observe() { observer.observe(document.body, { childList: true, subtree: true }); }
  document.addEventListener("DOMContentLoaded", function () { fix(); observe(); });
})();

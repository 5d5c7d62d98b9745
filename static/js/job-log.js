/* The job log's tools: search with highlighted matches (the CSS Custom Highlight API: the log's
   text is never rewritten, so appended output and the follow mode keep working), Enter /
   Shift+Enter or the arrows to move between matches, and the wrap toggle. */
(function () {
  "use strict";

  var matches = [];
  var current = -1;

  function box() { return document.getElementById("job-log"); }

  function textNodes(root) {
    var walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
    var nodes = [];
    while (walker.nextNode()) nodes.push(walker.currentNode);
    return nodes;
  }

  function findMatches(term) {
    var code = document.getElementById("job-log-text");
    var found = [];
    if (!code || !term) return found;
    var needle = term.toLowerCase();
    textNodes(code).forEach(function (node) {
      var hay = node.data.toLowerCase();
      var at = hay.indexOf(needle);
      while (at !== -1) {
        var range = new Range();
        range.setStart(node, at);
        range.setEnd(node, at + needle.length);
        found.push(range);
        at = hay.indexOf(needle, at + needle.length);
      }
    });
    return found;
  }

  function paint() {
    if (!window.CSS || !CSS.highlights || typeof Highlight === "undefined") return;
    var all = new Highlight();
    matches.forEach(function (range) { all.add(range); });
    CSS.highlights.set("log-search", all);
    if (current >= 0 && matches[current]) {
      CSS.highlights.set("log-search-current", new Highlight(matches[current]));
    } else {
      CSS.highlights.delete("log-search-current");
    }
  }

  function report() {
    var label = document.getElementById("job-log-matches");
    var input = document.getElementById("job-log-search");
    if (!label || !input) return;
    if (!input.value) label.textContent = "";
    else if (!matches.length) label.textContent = "no matches";
    else label.textContent = (current + 1) + " of " + matches.length + " match" + (matches.length === 1 ? "" : "es");
    var log = box();
    if (log) log.setAttribute("data-matches", String(matches.length));
  }

  function show(index) {
    if (!matches.length) { current = -1; paint(); report(); return; }
    current = (index + matches.length) % matches.length;
    paint();
    report();
    var log = box();
    var rect = matches[current].getBoundingClientRect();
    var frame = log.getBoundingClientRect();
    if (rect.top < frame.top || rect.bottom > frame.bottom) {
      log.scrollTop += rect.top - frame.top - log.clientHeight / 2;
    }
  }

  function search(keepPlace) {
    var input = document.getElementById("job-log-search");
    if (!input) return;
    matches = findMatches(input.value);
    if (!keepPlace || current >= matches.length) current = matches.length ? 0 : -1;
    paint();
    report();
  }

  function init() {
    var input = document.getElementById("job-log-search");
    if (!input || input.getAttribute("data-ready")) return;
    input.setAttribute("data-ready", "1");
    input.addEventListener("input", function () { search(false); if (matches.length) show(0); });
    input.addEventListener("keydown", function (event) {
      if (event.key !== "Enter") return;
      event.preventDefault();
      show(current + (event.shiftKey ? -1 : 1));
    });
    document.getElementById("job-log-next").addEventListener("click", function () { show(current + 1); });
    document.getElementById("job-log-prev").addEventListener("click", function () { show(current - 1); });
    var wrap = document.getElementById("job-log-wrap");
    wrap.addEventListener("change", function () {
      box().classList.toggle("log-nowrap", !wrap.checked);
    });
  }

  document.addEventListener("DOMContentLoaded", init);
  /* New output: matches in it count too (the reader's place is kept). */
  document.addEventListener("htmx:oobAfterSwap", function (event) {
    if (event.detail && event.detail.target && event.detail.target.id === "job-log-text") search(true);
  });
})();

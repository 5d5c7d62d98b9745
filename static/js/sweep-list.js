/* The jobs list's sweeps (templates/jobs/_sweep_group_row.html): a sweep's row opens to show
   its jobs below it, fetched as the list narrowed to the sweep (?sweep=<id>), and stays open
   when the table is refreshed. Without this file the row's link opens that list. */
(function () {
  "use strict";

  var open = {};  /* sweep id -> true while its jobs are shown */
  var SHOWN = 200;  /* the list's largest page: a bigger sweep links to its own list */

  function rowsOf(id) {
    return document.querySelectorAll('#job-table tr[data-sweep-child="' + id + '"]');
  }

  function close(toggle, id) {
    rowsOf(id).forEach(function (row) { row.remove(); });
    toggle.setAttribute("aria-expanded", "false");
    toggle.querySelector(".sweep-caret").textContent = "▸";
    delete open[id];
  }

  function expand(toggle, id) {
    var group = toggle.closest("tr");
    toggle.setAttribute("aria-expanded", "true");
    toggle.querySelector(".sweep-caret").textContent = "▾";
    open[id] = true;
    var url = toggle.getAttribute("href") + "&per_page=" + SHOWN;
    return fetch(url, { headers: { "HX-Request": "true" }, credentials: "same-origin" })
      .then(function (response) {
        if (!response.ok) throw new Error("the server answered " + response.status);
        return response.text();
      })
      .then(function (html) {
        if (!open[id] || !group.isConnected) return;
        rowsOf(id).forEach(function (row) { row.remove(); });
        var page = new DOMParser().parseFromString(html, "text/html");
        var anchor = group;
        page.querySelectorAll("#job-table tbody tr[data-job]").forEach(function (row) {
          row.setAttribute("data-sweep-child", id);
          row.classList.add("sweep-child");
          var name = row.querySelector(".job-name");
          if (name) name.classList.add("ps-3");
          anchor.insertAdjacentElement("afterend", row);
          anchor = row;
        });
        var more = page.querySelector("#job-table nav[aria-label='Job pages']");
        if (more) {
          var note = document.createElement("tr");
          note.setAttribute("data-sweep-child", id);
          note.innerHTML = '<td colspan="11" class="small"><a></a></td>';
          var link = note.querySelector("a");
          link.href = toggle.getAttribute("href");
          link.textContent = "Every job of this sweep";
          anchor.insertAdjacentElement("afterend", note);
        }
      })
      .catch(function () { close(toggle, id); });
  }

  document.addEventListener("click", function (event) {
    var toggle = event.target.closest ? event.target.closest("[data-sweep-toggle]") : null;
    if (!toggle || event.ctrlKey || event.metaKey || event.shiftKey) return;
    event.preventDefault();
    var id = toggle.getAttribute("data-sweep-toggle");
    if (toggle.getAttribute("aria-expanded") === "true") close(toggle, id);
    else expand(toggle, id);
  });

  /* The table is replaced every few seconds while jobs are active: open again what was open. */
  document.body.addEventListener("htmx:afterSwap", function () {
    Object.keys(open).forEach(function (id) {
      var toggle = document.querySelector('#job-table [data-sweep-toggle="' + id + '"]');
      if (toggle) expand(toggle, id);
      else delete open[id];
    });
  });
})();

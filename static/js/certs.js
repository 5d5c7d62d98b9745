// Login certificates: the download form posts and the browser saves the PEM, so the page
// itself stays as it was. Its list is fetched again (the same page) until the new certificate
// shows, so "no login certificates yet" does not outlive the download.
(function () {
  "use strict";
  const form = document.getElementById("cert-download-form");
  if (!form) return;

  function refresh(before, tries) {
    fetch(window.location.pathname, { credentials: "same-origin", headers: { Accept: "text/html" } })
      .then((r) => (r.ok ? r.text() : null))
      .then((html) => {
        const shown = document.getElementById("cert-list");
        const fresh = html && new DOMParser().parseFromString(html, "text/html").getElementById("cert-list");
        if (shown && fresh && fresh.dataset.count !== before) {
          shown.replaceWith(fresh);
          if (window.Portal && window.Portal.refreshTimes) window.Portal.refreshTimes(fresh);
          return;
        }
        if (tries > 1) setTimeout(() => refresh(before, tries - 1), 500);
      })
      .catch(() => {});
  }

  form.addEventListener("submit", () => {
    const shown = document.getElementById("cert-list");
    // After the post has been sent: the certificate is written before the file comes back.
    setTimeout(() => refresh(shown ? shown.dataset.count : "", 20), 300);
  });
})();

"""Every page of the portal (listed from the URL conf), in Chromium: zero axe-core violations
(WCAG 2.1 A and AA) in light and dark mode, every scrollable panel reachable by keyboard, no
horizontal overflow at 390 px, dark mode following ``prefers-color-scheme``, and warm load times.

Artifacts (gitignored): screenshots of every page in light and dark mode and at phone width in
``test-artifacts/screenshots/pages/``, and ``test-artifacts/pages.json`` (per page: path, axe
violations per mode, warm load in ms).

axe-core is vendored in ``static/vendor/axe-core/`` and injected by this test only; no page
loads it.
"""

from __future__ import annotations

import json
import os
import re
import shutil
from datetime import timedelta

import pytest
from django.contrib import admin
from django.urls import URLPattern, URLResolver, get_resolver
from django.utils import timezone
from playwright.sync_api import expect

from accounts.models import Membership, Profile
from accounts.tokens import api_token_rotate
from clusters.models import Slave
from interactive.models import InteractiveSession
from jobs.models import Job, JobEvent, UserUsage
from jobs.scheduler_bridge.snapshot import RUNNING_FIELDS, scheduler_config
from jobs.scheduler_bridge.usage import usage_accrue
from reservations.models import Reservation
from tapis.services import app_create
from tests.browser.support import PASSWORD, ROOT, SCREENSHOTS, USERNAME, login
from tests.web.factories import make_job

pytestmark = pytest.mark.browser

AXE = ROOT / "static" / "vendor" / "axe-core" / "axe.min.js"
ARTIFACTS = ROOT / "test-artifacts"
SHOTS = SCREENSHOTS / "pages"
PHONE = {"width": 390, "height": 844}
DESKTOP = {"width": 1280, "height": 900}
AXE_TAGS = ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa"]
ADMIN_NAME, ADMIN_PASSWORD = "root", "root-browser-pw"

# Routes of the URL conf that are not pages: fragments htmx swaps in, downloads, POST-only
# endpoints, the API (its docs page is visited), the admin's internals.
NOT_PAGES = {
    "jobs/new/convert": "JSON conversion endpoint of the editor (POST)",
    "jobs/<uuid:uuid>/live/": "htmx fragment of the job page",
    "jobs/<uuid:uuid>/log/": "htmx fragment of the job page",
    "jobs/<uuid:uuid>/log.txt": "plain-text log download",
    "accounts/logout/": "POST only",
    "profile/token/": "POST only (the profile page holds its form)",
    "certificates/new/": "PEM download (POST)",
    "certificates/<int:pk>/revoke/": "POST only",
    "apps/<str:app_id>/<str:version>/check": "htmx fragment of the app page (POST)",
    "apps/jobs/<uuid:uuid>/resubmit/": "POST only (the job page's Resubmit button)",
    "jobs/<uuid:uuid>/outputs/download": "file or zip download",
    "jobs/<uuid:uuid>/shares/": "POST only (the job page's share form)",
    "jobs/<uuid:uuid>/shares/<int:share_id>/revoke/": "POST only",
    "profile/time-zone/": "POST only (the browser saves its zone)",
    "jobs/bulk/": "POST from the jobs list: its confirmation page is checked below",
    "jobs/<uuid:uuid>/gang/resubmit/": "POST only (the gang section's Resubmit button)",
    "apps/<str:app_id>/<str:version>/shares/": "POST only (the app page's share form)",
    "apps/<str:app_id>/<str:version>/shares/<int:share_id>/revoke/": "POST only",
    "oidc/authenticate/": "a redirect to the identity provider (sign-in)",
    "oidc/callback/": "the identity provider's redirect back (sign-in)",
    r"reports/^(?P<kind>usage|sizes)\.(?P<extension>csv|json)$": "CSV or JSON download",
    "sessions/new": "POST only (the sessions page's form)",
    "sessions/<str:key>/open": "a redirect to the session proxy (sign-in hand-off)",
    "sessions/<str:key>/extend": "POST only (the session's Extend button)",
    "sessions/<str:key>/stop": "POST only (the session's Stop button)",
    "sessions/jobs/<uuid:job_uuid>/ports/<int:port>": "POST only (the job page's Open port buttons)",
}


def web_routes() -> set[str]:
    """Every route of the URL conf outside /api/ and /admin/, as Django writes them."""
    routes = set()

    def walk(patterns, prefix):
        for entry in patterns:
            route = str(entry.pattern)
            if isinstance(entry, URLResolver):
                if route.startswith(("api/", "admin/")):
                    continue
                walk(entry.url_patterns, prefix + route)
            elif isinstance(entry, URLPattern):
                routes.add(prefix + route)

    walk(get_resolver().url_patterns, "")
    return routes


AXE_RUN = """async (tags) => {
  const result = await axe.run(document, {runOnly: {type: 'tag', values: tags},
                                          resultTypes: ['violations']});
  return result.violations.map(v => ({
    id: v.id, impact: v.impact, help: v.help,
    nodes: v.nodes.slice(0, 5).map(n => n.target.join(' ') + ' :: ' + n.failureSummary)}));
}"""

# Scrollable boxes (content larger than the box, overflow auto/scroll) that a keyboard cannot
# reach: neither focusable themselves nor holding anything focusable.
UNREACHABLE_SCROLLERS = """() => {
  const focusable = 'a[href],button,input,select,textarea,[tabindex]:not([tabindex="-1"])';
  const out = [];
  for (const el of document.querySelectorAll('body *')) {
    const style = getComputedStyle(el);
    const scrolls = (/(auto|scroll)/.test(style.overflowY) && el.scrollHeight > el.clientHeight + 1)
      || (/(auto|scroll)/.test(style.overflowX) && el.scrollWidth > el.clientWidth + 1);
    if (!scrolls || style.visibility === 'hidden' || el.offsetParent === null) continue;
    if (el.matches(focusable) || el.querySelector(focusable)) continue;
    // A code editor's scroller: its own input (a sibling inside the editor) takes focus, and
    // the keys that move its cursor scroll it.
    const editor = el.closest('.CodeMirror');
    if (editor && editor.querySelector('textarea')) continue;
    out.push(el.tagName.toLowerCase() + (el.id ? '#' + el.id : '') +
             (el.className && typeof el.className === 'string' ? '.' + el.className.split(' ').join('.') : ''));
  }
  return out;
}"""

# The innermost elements that stick out past the right edge (to say what overflows).
WIDE_ELEMENTS = """(width) => {
  const wide = [...document.querySelectorAll('body *')].filter(
    el => el.getBoundingClientRect().right > width + 1 && el.offsetParent !== null);
  return wide.filter(el => !wide.some(other => other !== el && el.contains(other)))
    .slice(0, 5).map(el => el.tagName.toLowerCase() + (el.id ? '#' + el.id : '') +
      (typeof el.className === 'string' && el.className ? '.' + el.className.trim().split(/\\s+/).join('.') : ''));
}"""

# The one time rule (issue 28 item 2): every time a portal page shows is in the viewer's zone
# with its name. The viewer here is in Asia/Kolkata (IST, +05:30: a time converted by whole hours
# or left in UTC cannot pass). Offenders: a clock time not followed by " IST", the word UTC, an
# ISO time. Not the portal's own text: what the job printed (its log), the documents it was made
# from (its request, the editor) and an app's definition as the API gives it (the API is UTC).
ZONE, ZONE_LABEL = "Asia/Kolkata", "IST"
TIMES_IN_OTHER_ZONES = r"""(label) => {
  const clock = /\b\d{1,2}:\d{2}(?::\d{2})?(?:\.\d+)?Z?(\s*[AaPp]\.?[Mm]\.?)?(?:\s+([A-Z][A-Z0-9+:-]*|[+-]\d{2}))?/g;
  const out = [];
  const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  let node;
  while ((node = walker.nextNode())) {
    const el = node.parentElement;
    if (!el || el.closest('script,style,textarea,.CodeMirror,#job-log,#job-request,#app-definition-view,[aria-hidden=true]')) continue;
    if (!el.getClientRects().length) continue;  // not shown
    const text = node.textContent;
    for (const m of text.matchAll(clock)) {
      if (m[1] || m[2] !== label) out.push(text.trim().slice(0, 80));
    }
    if (/\bUTC\b|\d{4}-\d{2}-\d{2}T\d{2}:\d{2}/.test(text)) out.push(text.trim().slice(0, 80));
  }
  return [...new Set(out)].slice(0, 8);
}"""

WARM_LOAD_MS = """() => {
  const n = performance.getEntriesByType('navigation')[0];
  return Math.round(n.loadEventEnd - n.startTime);
}"""


@pytest.fixture
def site(portal, slave, settings, django_user_model, seeded_templates):
    """Rows for every page: jobs in several states, reservations (active and upcoming), usage,
    an offline slave, and a superuser for the admin."""
    settings.PORTAL_TASK_MODE = "record"
    settings.ROOT_URLCONF = "tests.browser.error_urls"
    user, project = portal.user, portal.project
    now = timezone.now()
    jobs = {
        "queued": make_job(
            owner=user,
            project=project,
            name="queued-sweep-7",
            explanations=["cluster 1: all 4 GPUs are in use", "waiting for 1 GPU"],
        ),
        "onhold": make_job(owner=user, project=project, status="ONHOLD", name="held-job"),
        "running": make_job(
            owner=user,
            project=project,
            status="RUNNING",
            slave=slave,
            name="running-training",
            port_mappings=[{"containerPort": 8888, "hostPort": 20001, "hostIp": "0.0.0.0"}],
        ),
        "finished": make_job(
            owner=user, project=project, status="FINISHED", slave=slave, exit_code=0, name="done"
        ),
        "failed": make_job(
            owner=user, project=project, status="FAILED", slave=slave, exit_code=2, name="broke"
        ),
        "cancelled": make_job(owner=user, project=project, status="CANCELLED", name="stopped"),
        # An interactive session, unused for 55 minutes: its page and the sessions page show
        # the countdowns and the cull's banner.
        "session": make_job(
            owner=user,
            project=project,
            status="RUNNING",
            slave=slave,
            name="jupyterlab-session",
            interactive=True,
        ),
        # From a Tapis app: its page holds the Tapis card with its stages' times.
        "tapis": make_job(
            owner=user,
            project=project,
            name="from-an-app",
            app_id="classify",
            app_version="1.0",
            origin={"tapis": {"appId": "classify", "appVersion": "1.0"}},
        ),
    }
    Job.objects.filter(pk=jobs["session"].pk).update(started_at=now - timedelta(minutes=55))
    InteractiveSession.objects.create(
        job=jobs["session"],
        template=seeded_templates["jupyterlab"],
        port=8888,
        landing_path="lab",
        upstream="10.0.0.9:8888",
        created_at=now - timedelta(minutes=55),
    )
    JobEvent.objects.create(
        job=jobs["tapis"],
        time=now - timedelta(seconds=3),
        type=JobEvent.Type.INFO,
        stage="PENDING",
        message="waiting for resources",
    )
    Slave.objects.create(
        name="gpu-off",
        cluster=slave.cluster,
        docker_url="unix:///nonexistent.sock",
        online=False,
        offline_reason="Error while fetching server API version: 10.0.0.7 refused",
    )
    upcoming = Reservation.objects.create(
        name="paper-deadline",
        cluster=slave.cluster,
        gpu_count=2,
        start=now + timedelta(days=2),
        end=now + timedelta(days=3),
        created_by=user,
    )
    upcoming.projects.add(project)
    Reservation.objects.create(
        name="maintenance",
        cluster=slave.cluster,
        gpu_count=1,
        start=now - timedelta(hours=1),
        end=now + timedelta(hours=2),
    )
    # Fair share as the scheduler's ticks would have left it: one tick when the jobs started,
    # one when two of them ended (the running one is added by the page up to now).
    ran = [jobs["running"], jobs["finished"], jobs["failed"]]
    rows = list(Job.objects.filter(pk__in=[j.pk for j in ran]).values(*RUNNING_FIELDS))
    for moment in (jobs["finished"].started_at, jobs["finished"].ended_at):
        usage_accrue(now=moment, running=rows, config=scheduler_config())
    api_token_rotate(user=user)  # the profile shows "Rotate token" (was 1.6:1 contrast)
    other = django_user_model.objects.create_user("erin", "erin@example.org", "erin-pw")
    UserUsage.objects.create(user=other, value=0.5 * 3600, updated_at=now)
    root = django_user_model.objects.create_superuser(
        ADMIN_NAME, f"{ADMIN_NAME}@example.org", ADMIN_PASSWORD
    )
    Membership.objects.create(user=root, project=project)
    # A Tapis app with arguments, an input and a variable: its page holds the generated form.
    app = app_create(
        user=user,
        definition={
            "id": "classify",
            "version": "1.0",
            "description": "image classifier",
            "containerImage": "gpuportal/busybox:latest",
            "command": "echo",
            "jobAttributes": {
                "parameterSet": {
                    "appArgs": [
                        {"name": "model", "inputMode": "REQUIRED", "arg": "--model m"},
                        {"name": "fast", "inputMode": "FIXED", "arg": "--fast"},
                    ],
                    "envVariables": [{"key": "MODE", "value": "quick"}],
                },
                "fileInputs": [{"name": "image", "inputMode": "REQUIRED"}],
                "resources": {"gpus": 0, "cpus": 1, "cpuMemoryGb": 1},
            },
        },
    )
    return {"portal": portal, "jobs": jobs, "reservation": upcoming, "root": root, "app": app}


def user_pages(site) -> list[tuple[str, str, str]]:
    """(name, path, the route of the URL conf it stands for)."""
    jobs, reservation = site["jobs"], site["reservation"]
    pages = [
        ("dashboard", "/", ""),
        ("jobs-list", "/jobs/", "jobs/"),
        ("create-job", "/jobs/new/", "jobs/new/"),
        *[
            (f"job-{state}", f"/jobs/{job.uuid}/", "jobs/<uuid:uuid>/")
            for state, job in jobs.items()
        ],
        *[
            (
                f"job-{action}-confirm",
                f"/jobs/{jobs[state].uuid}/{action}/",
                f"jobs/<uuid:uuid>/{action}/",
            )
            for action, state in [
                ("cancel", "running"),
                ("halt", "running"),
                ("hold", "queued"),
                ("release", "onhold"),
                ("delete", "finished"),
            ]
        ],
        ("live-clusters", "/live/clusters/", "live/clusters/"),
        ("live-slaves", "/live/slaves/", "live/slaves/"),
        ("reservations", "/reservations/", "reservations/"),
        ("reservation", f"/reservations/{reservation.uuid}/", "reservations/<uuid:uuid>/"),
        ("usage", "/usage/", "usage/"),
        ("sessions", "/sessions/", "sessions/"),
        ("reports", "/reports/?by=member&preset=last-30-days", "reports/"),
        ("apps", "/apps/", "apps/"),
        (
            "app",
            f"/apps/{site['app'].app_id}/{site['app'].version}/",
            "apps/<str:app_id>/<str:version>/",
        ),
        ("profile", "/profile/", "profile/"),
        ("certificates", "/certificates/", "certificates/"),
        ("api-docs", "/api/docs/", "api"),
        ("error-400", "/test-errors/400/", "test-errors/400/"),
        ("error-403", "/test-errors/403/", "test-errors/403/"),
        ("error-404", "/no-such-page/", "error"),
        ("error-500", "/test-errors/500/", "test-errors/500/"),
        # A real refusal, not the test view: a researcher opening an admin's form.
        ("error-403-reservation-new", "/reservations/new/", "reservations/new/"),
    ]
    return pages


def admin_pages(site) -> list[tuple[str, str, str]]:
    """Pages for admins: the portal's reservation forms, and the admin site."""
    jobs, reservation = site["jobs"], site["reservation"]
    pages = [
        ("reservation-new", "/reservations/new/", "reservations/new/"),
        (
            "reservation-edit",
            f"/reservations/{reservation.uuid}/edit/",
            "reservations/<uuid:uuid>/edit/",
        ),
        (
            "reservation-delete",
            f"/reservations/{reservation.uuid}/delete/",
            "reservations/<uuid:uuid>/delete/",
        ),
        ("admin-index", "/admin/", "admin"),
    ]
    for model in admin.site._registry:
        meta = model._meta
        pages.append(
            (
                f"admin-{meta.app_label}-{meta.model_name}",
                f"/admin/{meta.app_label}/{meta.model_name}/",
                "admin",
            )
        )
    pages += [
        ("admin-job-change", f"/admin/jobs/job/{jobs['running'].pk}/change/", "admin"),
        ("admin-job-delete", f"/admin/jobs/job/{jobs['running'].pk}/delete/", "admin"),
        ("admin-slave-add", "/admin/clusters/slave/add/", "admin"),
        ("admin-user-change", f"/admin/auth/user/{site['portal'].user.pk}/change/", "admin"),
    ]
    return pages


def check_page(page, url, name: str, mode: str, record: dict, problems: list) -> None:
    """``url``: the page's address, or a function that opens it (a page a form posts to) and
    returns the response."""
    if os.environ.get("EVERY_PAGE_ONLY") and not re.search(os.environ["EVERY_PAGE_ONLY"], name):
        return
    response = url(page) if callable(url) else page.goto(url)
    status = response.status if response else None
    expected = int(name.split("-")[1]) if name.startswith("error-") else 200
    if status != expected:
        problems.append(f"{name} [{mode}]: HTTP {status}, wanted {expected}")
    page.wait_for_load_state("load")
    unreachable = page.evaluate(UNREACHABLE_SCROLLERS)
    if unreachable:
        problems.append(f"{name} [{mode}]: scrollable, not reachable by keyboard: {unreachable}")
    if mode == "phone":
        width = page.evaluate("document.scrollingElement.scrollWidth")
        record["phone_scroll_width"] = width
        if width > PHONE["width"]:
            wide = page.evaluate(WIDE_ELEMENTS, PHONE["width"])
            problems.append(f"{name}: {width} px wide at a 390 px phone: {wide}")
    else:
        theme = page.evaluate("document.documentElement.getAttribute('data-bs-theme')")
        record.setdefault("theme", {})[mode] = theme
        # Django's admin has its own theme switch; every other page (the API docs included)
        # follows the system setting.
        if not name.startswith("admin") and theme != mode:
            problems.append(f"{name} [{mode}]: data-bs-theme is {theme!r}")
        if mode == "light" and not name.startswith(("admin", "api-docs")):
            # The API docs show the API, which stays UTC; the admin is Django's own.
            others = page.evaluate(TIMES_IN_OTHER_ZONES, ZONE_LABEL)
            if others:
                problems.append(f"{name}: times not in the viewer's zone ({ZONE}): {others}")
        page.add_script_tag(path=str(AXE))
        violations = page.evaluate(AXE_RUN, AXE_TAGS)
        record.setdefault("axe_violations", {})[mode] = len(violations)
        if violations:
            record.setdefault("axe_details", {})[mode] = violations
            problems.append(f"{name} [{mode}]: axe: {json.dumps(violations, indent=1)}")
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / f"{name}-{mode}.png"), full_page=True)
    if mode == "light" and not callable(url):
        page.goto(url)  # warm: the page's files are cached, the database is warm
        page.wait_for_load_state("load")
        record["warm_load_ms"] = page.evaluate(WARM_LOAD_MS)


def write_gallery(results: dict) -> None:
    """test-artifacts/screenshots/pages/index.html: every page in light, dark and at 390 px side
    by side, so that a change can be looked at in the artifact CI keeps (.ci/run)."""
    from html import escape

    rows = []
    for name, record in results.items():
        cells = "".join(
            f'<td><a href="{escape(name)}-{mode}.png"><img loading="lazy" alt="{escape(name)} '
            f'{mode}" src="{escape(name)}-{mode}.png"></a></td>'
            if (SHOTS / f"{name}-{mode}.png").exists()
            else "<td>—</td>"
            for mode in ("light", "dark", "phone")
        )
        path = re.sub(r"[0-9a-f]{8}-[0-9a-f-]{27}", "<uuid>", record["path"])
        rows.append(f"<tr><th>{escape(name)}<br><code>{escape(path)}</code></th>{cells}</tr>")
    (SHOTS / "index.html").write_text(
        '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>Every page</title>'
        "<style>img{width:320px;border:1px solid #999;vertical-align:top}"
        "th{text-align:left;vertical-align:top;font:13px sans-serif}</style></head><body>"
        "<h1>Every page: light, dark, 390 px</h1><table><tr><th>Page</th><th>Light</th>"
        "<th>Dark</th><th>390 px</th></tr>" + "".join(rows) + "</table></body></html>\n"
    )


def bulk_action(changelist: str, action: str):
    """Opens the confirmation page of ``action`` on every row of an admin change list."""

    def open_page(page):
        page.goto(changelist)
        page.check("#action-toggle")
        page.select_option("select[name=action]", action)
        with page.expect_navigation() as navigation:
            page.click("button[name=index]")
        return navigation.value

    return open_page


def jobs_bulk(url: str, action: str):
    """Opens the jobs list's confirmation page of ``action`` on every job of the page."""

    def open_page(page):
        page.goto(url)
        page.check("#bulk-all")
        page.select_option("#bulk-action", action)
        with page.expect_navigation() as navigation:
            page.click("#bulk-submit")
        return navigation.value

    return open_page


def sign_in(page, portal, username, password) -> None:
    page.goto(portal.at("/accounts/login/"))
    page.fill("#id_username", username)
    page.fill("#id_password", password)
    page.click("form[action='/accounts/login/'] button[type=submit]")
    expect(page.locator("#nav-user")).to_have_text(username)


def test_every_page_is_accessible_fits_a_phone_and_follows_dark_mode(site, page_of):
    portal = site["portal"]
    pages = user_pages(site)
    covered = {route for _name, _path, route in pages + admin_pages(site)} | {"accounts/login/"}
    missing = web_routes() - covered - set(NOT_PAGES)
    assert not missing, f"pages of the URL conf this test does not visit: {sorted(missing)}"

    for user in (portal.user, site["root"]):
        Profile.objects.update_or_create(user=user, defaults={"time_zone": ZONE})
    contexts = {
        "light": page_of(viewport=DESKTOP, color_scheme="light", timezone_id=ZONE),
        "dark": page_of(viewport=DESKTOP, color_scheme="dark", timezone_id=ZONE),
        "phone": page_of(viewport=PHONE, color_scheme="light", timezone_id=ZONE),
    }
    results: dict[str, dict] = {}
    problems: list[str] = []
    if not os.environ.get("EVERY_PAGE_ONLY"):
        shutil.rmtree(SHOTS, ignore_errors=True)  # no page's old screenshot outlives it

    # Signed out: the login page.
    for mode, page in contexts.items():
        record = results.setdefault("login", {"page": "login", "path": "/accounts/login/"})
        check_page(page, portal.at("/accounts/login/"), "login", mode, record, problems)

    for page in contexts.values():
        sign_in(page, portal, USERNAME, PASSWORD)
    for name, path, _route in pages:
        record = results.setdefault(name, {"page": name, "path": path})
        for mode, page in contexts.items():
            check_page(page, portal.at(path), name, mode, record, problems)

    # The admin, as a superuser (every table visible).
    for page in contexts.values():
        page.context.clear_cookies()
        sign_in(page, portal, ADMIN_NAME, ADMIN_PASSWORD)
    for name, path, _route in admin_pages(site):
        record = results.setdefault(name, {"page": name, "path": path})
        for mode, page in contexts.items():
            check_page(page, portal.at(path), name, mode, record, problems)

    # The admin's confirmation pages of bulk actions (a form posts to them).
    for action, path in [
        ("cancel", "/admin/jobs/job/"),
        ("hard_delete", "/admin/jobs/job/"),
        ("delete_selected", "/admin/clusters/slave/"),
    ]:
        name = f"admin-{path.split('/')[3]}-{action}-confirm"
        record = results.setdefault(name, {"page": name, "path": f"{path} (action {action})"})
        for mode, page in contexts.items():
            check_page(page, bulk_action(portal.at(path), action), name, mode, record, problems)
    # The jobs list's own bulk confirmation (a form posts to it).
    record = results.setdefault(
        "jobs-bulk-cancel-confirm",
        {"page": "jobs-bulk-cancel-confirm", "path": "/jobs/bulk/ (cancel)"},
    )
    for mode, page in contexts.items():
        check_page(
            page,
            jobs_bulk(portal.at("/jobs/"), "cancel"),
            "jobs-bulk-cancel-confirm",
            mode,
            record,
            problems,
        )

    ARTIFACTS.mkdir(exist_ok=True)
    summary = [
        {
            "page": r["page"],
            "path": re.sub(r"[0-9a-f]{8}-[0-9a-f-]{27}", "<uuid>", r["path"]),
            "axe_violations": r.get("axe_violations"),
            "warm_load_ms": r.get("warm_load_ms"),
            "phone_scroll_width": r.get("phone_scroll_width"),
        }
        for r in results.values()
    ]
    (ARTIFACTS / "pages.json").write_text(json.dumps(summary, indent=1) + "\n")
    details = {name: r.get("axe_details") for name, r in results.items() if r.get("axe_details")}
    (ARTIFACTS / "axe-details.json").write_text(json.dumps(details, indent=1) + "\n")
    write_gallery(results)
    if not os.environ.get("EVERY_PAGE_ONLY"):
        unshot = [
            f"{name}-{mode}"
            for name in results
            for mode in ("light", "dark", "phone")
            if not (SHOTS / f"{name}-{mode}.png").exists()
        ]
        assert not unshot, f"pages without a screenshot: {unshot}"
    assert len(summary) >= 40
    assert not problems, "\n".join(problems)


def test_dark_mode_follows_the_system_setting_as_it_changes(site, page_of):
    portal = site["portal"]
    page = page_of(viewport=DESKTOP, color_scheme="light")
    login(page, portal)
    page.goto(portal.at("/jobs/"))
    html = page.locator("html")
    expect(html).to_have_attribute("data-bs-theme", "light")
    light = page.evaluate("getComputedStyle(document.body).backgroundColor")
    page.emulate_media(color_scheme="dark")
    expect(html).to_have_attribute("data-bs-theme", "dark")
    dark = page.evaluate("getComputedStyle(document.body).backgroundColor")
    assert light != dark
    # Dark: the page's background is dark (each channel well below the middle).
    channels = [int(c) for c in re.findall(r"\d+", dark)[:3]]
    assert max(channels) < 80, dark


def test_footer_and_profile_link_to_working_api_docs(site, page_of):
    portal = site["portal"]
    page = page_of(viewport=DESKTOP)
    login(page, portal)
    page.goto(portal.at("/profile/"))
    for link in (
        page.locator("footer").get_by_role("link", name="API docs"),
        page.locator("main").get_by_role("link", name="API docs"),
    ):
        href = link.get_attribute("href")
        response = page.request.get(portal.at(href))
        assert response.status == 200 and "swagger" in response.text().lower(), href
    page.locator("footer").get_by_role("link", name="API docs").click()
    expect(page).to_have_url(re.compile(r"/api/docs/?$"))
    expect(page.locator(".swagger-ui")).to_be_visible()

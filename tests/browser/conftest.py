"""Fixtures of the browser tests: Debian's headless chromium driven by Playwright's sync API
against pytest-django's ``live_server``.

- ``browser``: chromium started once per test module (``executable_path=/usr/bin/chromium``;
  no browser is ever downloaded). Without it the tests skip, or fail with
  ``PORTAL_REQUIRE_BROWSER=1``. Playwright's sync API keeps an asyncio loop running in the main
  thread, so ``DJANGO_ALLOW_ASYNC_UNSAFE`` is set while the browser lives (the test's own ORM
  calls and pytest-django's flush run in that thread); it is restored afterwards.
- ``portal``: the live server (transactional, file-based SQLite shared by the server thread, the
  watcher thread and the test), tasks run inline, a unique ``PORTAL_INSTANCE``, and a member of a
  project who signs in with a password.
- ``local_slave``: the local Docker engine as slave ``local`` of cluster 1 with 2 declared GPUs,
  a real watcher thread following its events, and every container of the test removed at the end.
"""

from __future__ import annotations

import os
import threading
import time

import pytest

from tests.browser.support import PASSWORD, USERNAME, Portal
from tests.support.services import require

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    # Without these chromium phones home at start, and the refused connections are noisy.
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


@pytest.fixture(scope="module")
def browser():
    require(
        "browser", os.path.exists(CHROMIUM), f"{CHROMIUM} is missing (apt-get install chromium)"
    )
    try:
        from playwright.sync_api import sync_playwright
    except ImportError as error:
        require("browser", False, f"the playwright package is missing: {error}")
    previous = os.environ.get("DJANGO_ALLOW_ASYNC_UNSAFE")
    os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"
    playwright = sync_playwright().start()
    try:
        try:
            chromium = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        except Exception as error:  # a broken chromium is a missing browser
            require("browser", False, f"{CHROMIUM} did not start: {error}")
        yield chromium
        chromium.close()
    finally:
        playwright.stop()
        if previous is None:
            os.environ.pop("DJANGO_ALLOW_ASYNC_UNSAFE", None)
        else:
            os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = previous


@pytest.fixture
def portal(browser, live_server, settings, django_user_model):
    from accounts.models import Membership, Project

    os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"  # (the browser fixture restores it)
    settings.PORTAL_TASK_MODE = "inline"
    settings.PORTAL_INSTANCE = f"browser-{os.getpid()}-{time.monotonic_ns()}"
    settings.PORTAL_HALT_GRACE_S = 3
    settings.PORTAL_STOP_GRACE_S = 1
    user = django_user_model.objects.create_user(USERNAME, f"{USERNAME}@example.org", PASSWORD)
    project = Project.objects.create(name="browsing", gid=4711)
    Membership.objects.create(user=user, project=project)
    return Portal(url=live_server.url, user=user, project=project)


@pytest.fixture
def local_slave(portal, settings):
    """The local Docker engine as slave "local" (cluster 1, 2 declared GPUs), watched."""
    from clusters.models import Cluster
    from clusters.services import engine_for, slave_declare_gpus, slave_probe, slave_register
    from jobs.execution.container_spec import LABEL_INSTANCE
    from jobs.execution.watcher import SlaveWatch
    from tests.integration.docker_support import docker_url, require_docker

    require_docker(docker_url())
    cluster, _ = Cluster.objects.get_or_create(id=1)
    slave = slave_register(name="local", cluster=cluster, docker_url=docker_url(), host="127.0.0.1")
    slave_declare_gpus(slave=slave, gpus=[("Demo GPU", 1024)] * 2)
    slave = slave_probe(slave=slave)
    assert slave.online, slave.offline_reason
    stop = threading.Event()
    watch = SlaveWatch(slave, stop)
    watch.start()
    time.sleep(0.3)  # let the event stream open
    yield slave
    stop.set()
    with engine_for(slave) as engine:
        leftovers = engine.list_by_labels({LABEL_INSTANCE: settings.PORTAL_INSTANCE})
        for container in leftovers:
            engine.remove(container.id)
    if leftovers:
        # The watcher handles the removal's "die" event, then sees the stop: wait for it, so it
        # does not touch the database while the test's data is flushed.
        watch.join(timeout=5)


@pytest.fixture
def js_errors():
    """Uncaught script errors and console errors (failed loads included) of the test's pages."""
    return []


@pytest.fixture
def page_of(browser, js_errors):
    """page_of(**context options) -> a new page; every context is closed after the test."""
    contexts = []

    def make(**options):
        options.setdefault("viewport", {"width": 1280, "height": 900})
        context = browser.new_context(**options)
        context.set_default_timeout(10_000)
        contexts.append(context)
        page = context.new_page()
        page.on("pageerror", lambda error: js_errors.append(f"{page.url}: {error}"))
        page.on(
            "console",
            lambda message: (
                message.type == "error" and js_errors.append(f"{page.url}: console: {message.text}")
            ),
        )
        return page

    yield make
    for context in contexts:
        context.close()


@pytest.fixture
def page(page_of):
    return page_of()

"""gunicorn settings of the web process (``gunicorn -c python:portal.gunicorn_conf``).

Used by ``manage.py run_portal`` and deploy/systemd/gpuportal-web.service alike. Threads per
worker keep a slow request (a Docker log read on a far slave) from blocking the others.
"""

import os

from portal.envconfig import env_int

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "portal.settings")

wsgi_app = "portal.wsgi:application"
bind = [os.environ.get("PORTAL_WEB_BIND", "127.0.0.1:8000")]
workers = env_int("PORTAL_WEB_WORKERS", 2)
worker_class = "gthread"
threads = env_int("PORTAL_WEB_THREADS", 4)
timeout = env_int("PORTAL_WEB_TIMEOUT_S", 60)
# How long an idle keep-alive connection stays open. nginx keeps idle connections to the portal
# for reuse and must always be the side that closes one: its upstream `keepalive_timeout`
# (60 s in deploy/nginx/gpuportal.conf.template) stays below this. With gunicorn's default of
# 2 s, gunicorn closed them under nginx, and a request sent on one at that moment failed: nginx
# retries a GET on a fresh connection but never a POST, so a submit got the front end's 503.
keepalive = env_int("PORTAL_WEB_KEEPALIVE_S", 75)
graceful_timeout = 10
# One access line per request on stdout (journald under systemd); errors on stderr.
accesslog = "-"
errorlog = "-"
# gunicorn >= 25.1 opens a control socket at one path per user account: a second portal (or a
# test) run by the same account would take it over. systemd / run_portal manage the processes.
control_socket_disable = True

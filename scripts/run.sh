#!/usr/bin/env bash
# Set up and run the portal on its embedded defaults: SQLite, django-q2's ORM broker and the
# local Docker engine as slave "local". Ctrl-C stops the web server (gunicorn), q
# cluster, watcher and SSH gateway.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup-venv.sh
# var/ (mode 0700) is made by the settings on first use; migrate also makes the schedules.
.venv/bin/python manage.py migrate --noinput
.venv/bin/python manage.py bootstrap_demo
echo "Open http://127.0.0.1:8000/ (admin at http://127.0.0.1:8000/admin/); SSH into jobs on port 2222"
exec .venv/bin/python manage.py run_portal --addr 127.0.0.1:8000

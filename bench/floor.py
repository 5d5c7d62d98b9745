"""The floor of ``bench/api.py``: a bare DRF token-authenticated insert endpoint.

Routed only by bench/urls.py (``DJANGO_SETTINGS_MODULE=bench.settings``, bench/api.py's own
gunicorn). It runs what any API write runs (DRF, the token authentication, a JSON body, one short
transaction inserting one row) and nothing else, so bench/api.py can put the submit endpoint's
throughput beside what the same stack allows. The table is made by bench/api.py's seeding, not
by a migration.
"""

import json

from django.db import connection, transaction
from django.http import HttpResponse
from rest_framework.permissions import IsAuthenticated
from rest_framework.views import APIView

from core.api.common import read_body

FLOOR_TABLE = "bench_floor"


def create_floor_table() -> None:
    with connection.cursor() as cursor:
        cursor.execute(
            f"CREATE TABLE IF NOT EXISTS {FLOOR_TABLE} "
            "(id SERIAL PRIMARY KEY, user_id INTEGER NOT NULL, body TEXT NOT NULL)"
            if connection.vendor == "postgresql"
            else f"CREATE TABLE IF NOT EXISTS {FLOOR_TABLE} "
            "(id INTEGER PRIMARY KEY AUTOINCREMENT, user_id INTEGER NOT NULL, body TEXT NOT NULL)"
        )


class BenchFloorView(APIView):
    permission_classes = [IsAuthenticated]

    def post(self, request):
        document = json.loads(read_body(request))
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute(
                f"INSERT INTO {FLOOR_TABLE} (user_id, body) VALUES (%s, %s)",
                [request.user.pk, json.dumps(document)],
            )
        return HttpResponse("ok", status=201, content_type="text/plain; charset=utf-8")

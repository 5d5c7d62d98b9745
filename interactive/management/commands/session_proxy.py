"""Run the session proxy (docs/sessions.md, "The proxy"): interactive.proxy.gateway under uvicorn.

uvicorn stops on SIGTERM: it refuses new connections, gives open ones GRACEFUL_S, and exits.
"""

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from interactive.proxy.serving import proxy_server_make


class Command(BaseCommand):
    help = "Serve interactive sessions (HTTP and WebSocket) on PORTAL_SESSION_PROXY_BIND."

    def add_arguments(self, parser):
        parser.add_argument(
            "--bind", default=None, help="host:port (default PORTAL_SESSION_PROXY_BIND)"
        )

    def handle(self, *args, **options):
        bind = options["bind"] or settings.PORTAL_SESSION_PROXY_BIND
        host, _, port = bind.rpartition(":")
        if not host or not port.isdigit():
            raise CommandError(f"--bind must be host:port, not {bind!r}")
        server = proxy_server_make(host=host.strip("[]"), port=int(port))
        self.stdout.write(
            f"Session proxy on {bind} (browsers are sent to {settings.PORTAL_SESSION_PROXY_URL})"
        )
        self.stdout.flush()
        server.run()

"""Run the SSH gateway into running jobs (docs/ssh.md)."""

import asyncio
import logging

from django.conf import settings
from django.core.management.base import BaseCommand

from ssh.gateway import Gateway


class Command(BaseCommand):
    help = "Serve SSH/SFTP/scp into running jobs' containers on PORTAL_SSH_BIND:PORTAL_SSH_PORT."

    def add_arguments(self, parser):
        parser.add_argument("--bind", default=None, help="address (default PORTAL_SSH_BIND)")
        parser.add_argument("--port", type=int, default=None, help="port (default PORTAL_SSH_PORT)")

    def handle(self, *args, **options):
        logging.getLogger("asyncssh").setLevel(logging.WARNING)
        bind = options["bind"] or settings.PORTAL_SSH_BIND
        port = options["port"] if options["port"] is not None else settings.PORTAL_SSH_PORT
        gateway = Gateway(
            host=bind,
            port=port,
            host_key_path=settings.PORTAL_SSH_HOST_KEY,
            poll_s=settings.PORTAL_SSH_POLL_S,
        )

        async def main():
            listening = await gateway.start()
            self.stdout.write(
                f"SSH gateway on {bind}:{listening} (clients are told "
                f"{settings.PORTAL_SSH_HOST}:{settings.PORTAL_SSH_PORT})"
            )
            self.stdout.flush()
            try:
                await asyncio.Event().wait()
            finally:
                await gateway.stop()

        try:
            asyncio.run(main())
        except KeyboardInterrupt:
            pass

from django.core.management.base import BaseCommand

from portal.bootstrap import bootstrap_demo


class Command(BaseCommand):
    help = "Create (once) the admin account, demo project, cluster 1 and slave 'local'."

    def handle(self, *args, **options):
        result = bootstrap_demo()
        slave = result.slave
        state = "online" if slave.online else f"OFFLINE ({slave.offline_reason})"
        self.stdout.write(
            f"Admin login: {result.username} / {result.password}  (stored in {result.password_file})\n"
            f"Slave 'local' ({slave.docker_url}): {state}, {slave.gpus.count()} GPU(s)"
        )

from django.core.management.base import BaseCommand

from jobs.execution.watcher import watch_forever


class Command(BaseCommand):
    help = "Follow every slave's Docker events and finish jobs as soon as their container exits."

    def handle(self, *args, **options):
        self.stdout.write("watching slaves (Ctrl-C stops)")
        try:
            watch_forever()
        except KeyboardInterrupt:
            pass

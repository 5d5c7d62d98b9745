"""manage.py directory_sync: check every directory user now (what the periodic schedule does a
slice at a time), printing the counts by outcome."""

import json

from django.core.management.base import BaseCommand

from accounts.directory.sync import directory_sync


class Command(BaseCommand):
    help = "Ask the LDAP directory and the OIDC provider about every directory user now."

    def handle(self, *args, **options):
        self.stdout.write(json.dumps(directory_sync(), sort_keys=True))

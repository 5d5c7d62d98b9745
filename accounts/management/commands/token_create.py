"""``manage.py token_create USER``: create (or rotate) a user's API token and print the key once.

The portal keeps only a hash of the key: this output is the only place it appears.
"""

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from accounts.tokens import api_token_rotate


class Command(BaseCommand):
    help = "Create or replace USER's API token and print the key (shown only this once)."

    def add_arguments(self, parser):
        parser.add_argument("username")
        parser.add_argument("--name", default="cli", help="a label for the token")

    def handle(self, *args, username, name, **options):
        user = get_user_model().objects.filter(username=username).first()
        if user is None:
            raise CommandError(f"no user {username!r}")
        _, key = api_token_rotate(user=user, name=name)
        self.stdout.write(key)

"""``manage.py tapis_token USER``: create (or rotate) USER's API token and print it wrapped as
the JWT that tapipy wants (``Tapis(base_url=..., access_token=...)``); shown only this once."""

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from accounts.tokens import api_token_rotate
from tapis.api.auth import tapis_token_wrap


class Command(BaseCommand):
    help = "Create or replace USER's API token and print it as a Tapis (tapipy) access token."

    def add_arguments(self, parser):
        parser.add_argument("username")

    def handle(self, *args, username, **options):
        user = get_user_model().objects.filter(username=username).first()
        if user is None:
            raise CommandError(f"no user {username!r}")
        _, key = api_token_rotate(user=user, name="tapis")
        self.stdout.write(tapis_token_wrap(key=key, username=user.username))

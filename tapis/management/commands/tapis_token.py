"""``manage.py tapis_token USER``: issue USER a Tapis token and print it wrapped as the JWT
that tapipy wants (``Tapis(base_url=..., access_token=...)``); shown only this once. The
user's API token is left alone. ``--revoke [PREFIX]`` revokes one (or every) Tapis token,
``--list`` shows them (docs/tapis.md)."""

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from core.errors import Conflict
from tapis.api.auth import tapis_token_wrap
from tapis.models import TapisToken
from tapis.tokens import tapis_token_issue, tapis_token_revoke


class Command(BaseCommand):
    help = (
        "Issue USER a Tapis token and print it as a tapipy access token (the API token stays "
        "as it is); --revoke [PREFIX] or --list."
    )

    def add_arguments(self, parser):
        parser.add_argument("username")
        parser.add_argument("--name", default="", help="what the token is for (shown by --list)")
        action = parser.add_mutually_exclusive_group()
        action.add_argument(
            "--revoke",
            nargs="?",
            const="",
            metavar="PREFIX",
            help="revoke the Tapis token starting with PREFIX, or every one without it",
        )
        action.add_argument(
            "--list", dest="list_tokens", action="store_true", help="list the user's Tapis tokens"
        )

    def handle(self, *args, username, name, revoke, list_tokens, **options):
        user = get_user_model().objects.filter(username=username).first()
        if user is None:
            raise CommandError(f"no user {username!r}")
        if list_tokens:
            for token in TapisToken.objects.filter(user=user):
                used = token.last_used.isoformat() if token.last_used else "never"
                self.stdout.write(
                    f"{token.prefix}  {token.created.isoformat()}  {used}  {token.name}"
                )
            return
        if revoke is not None:
            removed = tapis_token_revoke(user=user, prefix=revoke)
            if revoke and not removed:
                raise CommandError(f"{username} has no Tapis token starting with {revoke!r}")
            self.stderr.write(f"{removed} Tapis token(s) of {username} revoked")
            return
        try:
            _, key = tapis_token_issue(user=user, name=name)
        except Conflict as exc:
            raise CommandError(str(exc)) from None
        self.stdout.write(tapis_token_wrap(key=key, username=user.username))

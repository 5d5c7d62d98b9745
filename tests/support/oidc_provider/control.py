"""Set up the test OpenID Connect provider's users, groups and clients (run from the repository
root, with OIDC_PROVIDER_DIR as scripts/oidc-provider.sh set it):

    python -m tests.support.oidc_provider.control client ID SECRET REDIRECT_URI...
    python -m tests.support.oidc_provider.control user NAME --password PW [--email E]
        [--given G] [--family F] [--groups a,b] [--disabled]

Each command prints one JSON object. A user's groups are set to exactly those given.
"""

import argparse
import json
import os


def _django() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tests.support.oidc_provider.settings")
    import django

    django.setup()


def client(args) -> dict:
    from oauth2_provider.models import Application

    application, _ = Application.objects.update_or_create(
        client_id=args.client_id,
        defaults={
            "name": f"client {args.client_id}",
            "client_secret": args.secret,
            "client_type": Application.CLIENT_CONFIDENTIAL,
            "authorization_grant_type": Application.GRANT_AUTHORIZATION_CODE,
            "redirect_uris": " ".join(args.redirect_uris),
            "algorithm": Application.RS256_ALGORITHM,
            "skip_authorization": True,
        },
    )
    return {"client_id": application.client_id}


def user(args) -> dict:
    from django.contrib.auth.models import Group, User

    person, _ = User.objects.get_or_create(username=args.name)
    person.set_password(args.password)
    person.email = args.email or f"{args.name}@lab.example"
    person.first_name, person.last_name = args.given, args.family
    person.is_active = not args.disabled
    person.save()
    names = [name for name in args.groups.split(",") if name]
    person.groups.set([Group.objects.get_or_create(name=name)[0] for name in names])
    return {"sub": str(person.pk), "groups": names, "active": person.is_active}


def main() -> None:
    parser = argparse.ArgumentParser()
    commands = parser.add_subparsers(dest="command", required=True)
    made = commands.add_parser("client")
    made.add_argument("client_id")
    made.add_argument("secret")
    made.add_argument("redirect_uris", nargs="+")
    made.set_defaults(run=client)
    person = commands.add_parser("user")
    person.add_argument("name")
    person.add_argument("--password", required=True)
    person.add_argument("--email", default="")
    person.add_argument("--given", default="")
    person.add_argument("--family", default="")
    person.add_argument("--groups", default="")
    person.add_argument("--disabled", action="store_true")
    person.set_defaults(run=user)
    args = parser.parse_args()
    _django()
    print(json.dumps(args.run(args)))


if __name__ == "__main__":
    main()

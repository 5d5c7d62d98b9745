"""A real OpenID Connect provider for the sign-in tests: a tiny Django project running
django-oauth-toolkit with OIDC on loopback (scripts/oidc-provider.sh starts it; docs/sign-in.md
"Test set-ups"). control.py adds its users, groups and the portal's client."""

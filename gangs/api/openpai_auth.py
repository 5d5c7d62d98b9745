"""OpenPAI's bearer tokens on the OpenPAI routes (docs/openpai.md, "OpenPAI's REST API").

OpenPAI's clients send ``Authorization: Bearer <token>`` with a token from the user's profile.
Here that token is the portal's API token (the profile page's, the one gpulab-cli and REST
scripts use): OpenPAI users paste it where they pasted OpenPAI's, nothing new is issued or
stored. ``Authorization: Token <key>``, a browser session and gpulab-cli's login certificate
work on these routes as on every other.
"""

from __future__ import annotations

from drf_spectacular.extensions import OpenApiAuthenticationExtension

from accounts.tokens import ApiTokenAuthentication


class OpenPaiBearerAuthentication(ApiTokenAuthentication):
    """``Authorization: Bearer <portal API token>``."""

    keyword = "Bearer"


class OpenPaiBearerScheme(OpenApiAuthenticationExtension):
    """The OpenAPI security scheme of OpenPaiBearerAuthentication (``GET /api/schema``)."""

    target_class = OpenPaiBearerAuthentication
    name = "bearerAuth"

    def get_security_definition(self, auto_schema):
        return {
            "type": "http",
            "scheme": "bearer",
            "description": "OpenPAI's bearer token: the portal API token of the profile page "
            "(docs/openpai.md).",
        }

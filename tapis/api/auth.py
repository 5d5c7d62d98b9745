"""``X-Tapis-Token``: how Tapis clients (tapipy, curl scripts) send their token. The portal
accepts its own API token there (docs/tapis.md), checked exactly as ``Authorization: Token``."""

from rest_framework.authentication import BaseAuthentication

from portal.tokens import ApiTokenAuthentication

HEADER = "HTTP_X_TAPIS_TOKEN"


class TapisTokenAuthentication(BaseAuthentication):
    def authenticate(self, request):
        key = request.META.get(HEADER, "").strip()
        if not key:
            return None  # the other methods (Authorization: Token, session) may apply
        return ApiTokenAuthentication().authenticate_credentials(key)

    def authenticate_header(self, request):
        return 'X-Tapis-Token realm="api"'

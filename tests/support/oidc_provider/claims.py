"""What the test provider tells about a user, and when it refuses a refresh."""

from oauth2_provider.oauth2_validators import OAuth2Validator


class LabClaims(OAuth2Validator):
    """The claims Keycloak sends with a group mapper: names, e-mail and ``groups``; and, as
    Keycloak and Entra ID do, a disabled user's refresh tokens stop working."""

    oidc_claim_scope = {**OAuth2Validator.oidc_claim_scope, "groups": "groups"}

    def get_additional_claims(self, request):
        user = request.user
        return {
            "preferred_username": user.username,
            "email": user.email,
            "email_verified": True,
            "name": user.get_full_name(),
            "given_name": user.first_name,
            "family_name": user.last_name,
            "groups": sorted(user.groups.values_list("name", flat=True)),
        }

    def validate_refresh_token(self, refresh_token, client, request, *args, **kwargs):
        valid = super().validate_refresh_token(refresh_token, client, request, *args, **kwargs)
        return valid and request.user.is_active

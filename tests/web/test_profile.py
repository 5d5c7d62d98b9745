"""Profile: API token, SSH keys, projects, certificates link."""

import base64

from accounts.models import ApiToken, Profile
from accounts.views import ssh_key_problem


def ed25519_key(comment="alice@laptop"):
    kind = b"ssh-ed25519"
    blob = len(kind).to_bytes(4, "big") + kind + (32).to_bytes(4, "big") + bytes(range(32))
    return f"ssh-ed25519 {base64.b64encode(blob).decode()} {comment}"


def test_profile_page(member_client, member, project):
    html = member_client.get("/profile/").content.decode()
    assert "vision" in html and 'href="/certificates/"' in html
    assert "urn:publicid:IDN+gpuportal.local+user+alice" in html
    assert "You have no API token yet" in html


def _shown_key(response) -> str:
    return response.context["new_key"]


def test_token_create_shown_once_then_only_prefix(member_client, member):
    response = member_client.post("/profile/token/")
    assert response.status_code == 200 and response["Cache-Control"] == "no-store"
    first = _shown_key(response)
    assert len(first) == 40 and first in response.content.decode()
    token = ApiToken.objects.get(user=member)
    assert first.startswith(token.prefix)
    later = member_client.get("/profile/").content.decode()
    assert first not in later  # never again
    assert f"{token.prefix}…" in later
    response = member_client.post("/profile/token/")
    second = _shown_key(response)
    assert second != first
    assert ApiToken.objects.filter(user=member).count() == 1
    assert any("old one no longer works" in str(m) for m in response.context["messages"])
    assert member_client.get("/profile/token/").status_code == 405


def test_ssh_form_on_the_token_answer_posts_to_the_profile(member_client):
    html = member_client.post("/profile/token/").content.decode()
    assert 'action="/profile/" novalidate' in html


def test_tokens_are_personal(member_client, outsider_client, outsider):
    key = _shown_key(outsider_client.post("/profile/token/"))
    assert key not in member_client.get("/profile/").content.decode()
    assert (
        ApiToken.objects.get(user=outsider).prefix
        not in member_client.get("/profile/").content.decode()
    )


def test_ssh_keys_are_validated_and_saved(member_client, member):
    good = ed25519_key()
    response = member_client.post("/profile/", {"ssh_public_keys": f"\n{good}\n\n"})
    assert response.status_code == 302
    assert Profile.objects.get(user=member).ssh_key_list == [good]
    response = member_client.post("/profile/", {"ssh_public_keys": f"{good}\nssh-rsa nonsense!"})
    assert response.status_code == 200
    assert "line 2" in str(response.context["form"].errors)
    assert Profile.objects.get(user=member).ssh_key_list == [good]


def test_ssh_key_problems():
    assert ssh_key_problem(ed25519_key()) is None
    assert "unknown key type" in ssh_key_problem("ssh-foo AAAA")
    assert "base64" in ssh_key_problem("ssh-ed25519 AAA*")
    assert "does not match" in ssh_key_problem("ssh-rsa " + ed25519_key().split()[1])
    assert "expected" in ssh_key_problem("just-one-word")

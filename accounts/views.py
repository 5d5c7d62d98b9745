"""Profile page: API token, SSH keys, projects."""

import base64
import binascii
import re

from django import forms
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

from accounts.models import Membership, Profile, user_urn
from accounts.timezones import zone_names
from accounts.tokens import api_token_of, api_token_rotate

# --- profile --------------------------------------------------------------------------------

SSH_KEY_TYPES = (
    "ssh-ed25519",
    "ssh-rsa",
    "ssh-dss",
    "ecdsa-sha2-nistp256",
    "ecdsa-sha2-nistp384",
    "ecdsa-sha2-nistp521",
    "sk-ssh-ed25519@openssh.com",
    "sk-ecdsa-sha2-nistp256@openssh.com",
)
_SSH_LINE = re.compile(r"^(\S+)\s+([A-Za-z0-9+/=]+)(\s+.*)?$")
MAX_SSH_KEYS = 20


def ssh_key_problem(line: str) -> str | None:
    """Why ``line`` is not an OpenSSH public key, or None when it is one."""
    match = _SSH_LINE.match(line)
    if not match:
        return "expected '<type> <base64 key> [comment]'"
    kind, blob = match.group(1), match.group(2)
    if kind not in SSH_KEY_TYPES:
        return f"unknown key type {kind!r} (expected one of {', '.join(SSH_KEY_TYPES[:3])}, ...)"
    try:
        raw = base64.b64decode(blob, validate=True)
    except (binascii.Error, ValueError):
        return "the key is not valid base64"
    # The blob starts with its own type name as an SSH string: uint32 length + bytes.
    if len(raw) < 4 or raw[4 : 4 + int.from_bytes(raw[:4], "big")] != kind.encode():
        return f"the key data does not match its type {kind}"
    return None


class SshKeysForm(forms.Form):
    ssh_public_keys = forms.CharField(
        required=False,
        label="SSH public keys",
        help_text="One OpenSSH public key per line (e.g. the contents of ~/.ssh/id_ed25519.pub). "
        "They are added to your interactive jobs.",
        widget=forms.Textarea(attrs={"rows": 5, "spellcheck": "false", "class": "font-monospace"}),
    )

    def clean_ssh_public_keys(self):
        lines = [line.strip() for line in self.cleaned_data["ssh_public_keys"].splitlines()]
        lines = [line for line in lines if line]
        problems = []
        for number, line in enumerate(lines, start=1):
            problem = ssh_key_problem(line)
            if problem:
                problems.append(f"line {number}: {problem}")
        if len(lines) > MAX_SSH_KEYS:
            problems.append(f"at most {MAX_SSH_KEYS} keys")
        if problems:
            raise forms.ValidationError(problems)
        return "\n".join(lines)


@login_required
def profile(request):
    user = request.user
    profile_obj, _ = Profile.objects.get_or_create(user=user)
    form = SshKeysForm(
        request.POST or None, initial={"ssh_public_keys": profile_obj.ssh_public_keys}
    )
    if request.method == "POST" and form.is_valid():
        profile_obj.ssh_public_keys = form.cleaned_data["ssh_public_keys"]
        profile_obj.save(update_fields=["ssh_public_keys"])
        count = len(profile_obj.ssh_key_list)
        messages.success(request, f"SSH keys saved ({count} key{'s' if count != 1 else ''}).")
        return redirect("profile")
    return _render_profile(request, form=form, profile_obj=profile_obj)


def _render_profile(request, *, form, profile_obj, new_key: str | None = None):
    user = request.user
    return render(
        request,
        "portal/profile.html",
        {
            "form": form,
            "token": api_token_of(user),
            # Only in the answer to the POST that created it: the key is stored nowhere in clear.
            "new_key": new_key,
            "memberships": list(
                Membership.objects.filter(user=user)
                .select_related("project")
                .order_by("project__name")
            ),
            "urn": user_urn(user.username),
            "key_count": len(profile_obj.ssh_key_list),
            "zone_names": zone_names(),
            "zone_name": profile_obj.time_zone or "UTC",
        },
    )


@login_required
@require_POST
def token_rotate(request):
    """Create the API token, or replace it: the old one stops working at once.

    The key is stored hashed, so this answer (the profile page rendered with the new key, not a
    redirect) is the only time it is shown; afterwards the page shows its prefix.
    """
    had = api_token_of(request.user) is not None
    _, key = api_token_rotate(user=request.user, name="profile")
    messages.success(
        request,
        "New API token created; the old one no longer works." if had else "API token created.",
    )
    profile_obj, _ = Profile.objects.get_or_create(user=request.user)
    form = SshKeysForm(initial={"ssh_public_keys": profile_obj.ssh_public_keys})
    response = _render_profile(request, form=form, profile_obj=profile_obj, new_key=key)
    response["Cache-Control"] = "no-store"  # the key must not stay in any cache
    return response

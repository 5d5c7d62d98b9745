"""Sign-in with the lab's identity: OpenID Connect and LDAP users, their groups mapped to
projects at each sign-in and by a periodic sync (docs/sign-in.md)."""

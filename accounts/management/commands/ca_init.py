from django.core.management.base import BaseCommand

from accounts.certs.ca import ca_get_or_create


class Command(BaseCommand):
    help = (
        "Create the portal CA that signs gpulab-cli login certificates (once; later runs keep "
        "it) and print where its certificate is: the TLS front end's ssl_client_certificate."
    )

    def add_arguments(self, parser):
        parser.add_argument(
            "--print-cert-path",
            action="store_true",
            help="Print only the path of the CA certificate (for scripts).",
        )

    def handle(self, *args, print_cert_path=False, **options):
        ca, created = ca_get_or_create()
        if print_cert_path:
            self.stdout.write(str(ca.cert_path))
            return
        verb = "created" if created else "exists"
        self.stdout.write(
            f"Portal CA {verb}: {ca.cert_path}\n"
            f"  subject: {ca.certificate.subject.rfc4514_string()}\n"
            f"  SHA-256: {ca.fingerprint}\n"
            f"  valid until: {ca.certificate.not_valid_after_utc:%Y-%m-%d}\n"
            f"  key: {ca.cert_path.parent / 'ca.key'} (keep it secret, back it up)"
        )

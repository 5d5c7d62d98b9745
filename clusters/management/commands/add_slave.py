from django.core.management.base import BaseCommand, CommandError

from clusters.engine_policy import insecure_tcp_problem
from clusters.services import cluster_ensure, slave_probe, slave_register


def parse_declared(value: str) -> list[tuple[str, int]]:
    """``2xV100:16384`` or ``V100:16384,A100:81920`` or ``2`` (demo GPUs)."""
    gpus = []
    for part in value.split(","):
        part = part.strip()
        if not part:
            continue
        if part.isdigit():
            gpus += [("Declared GPU", 0)] * int(part)
            continue
        count, _, rest = part.partition("x") if part.split("x", 1)[0].isdigit() else ("1", "", part)
        model, _, memory = rest.partition(":")
        if not model or (memory and not memory.isdigit()):
            raise CommandError(f"--declare-gpus: cannot read {part!r} (use COUNTxMODEL:MEMORY_MB)")
        gpus += [(model, int(memory or 0))] * int(count)
    return gpus


class Command(BaseCommand):
    help = "Register (or update) a slave: a Docker engine that runs jobs."

    def add_arguments(self, parser):
        parser.add_argument("name")
        parser.add_argument("--cluster", type=int, required=True)
        parser.add_argument(
            "--docker",
            required=True,
            help="unix:///path or tcp://host:2376",
        )
        parser.add_argument("--host", default="", help="DNS name users reach mapped ports on")
        parser.add_argument("--tls-ca", default="")
        parser.add_argument("--tls-cert", default="")
        parser.add_argument("--tls-key", default="")
        parser.add_argument("--declare-gpus", default=None, help="e.g. 2xV100:16384")
        parser.add_argument("--no-probe", action="store_true")
        parser.add_argument(
            "--allow-insecure-tcp",
            action="store_true",
            help="accept a tcp:// engine without TLS files (anyone reaching it runs root "
            "containers; test networks only)",
        )

    def handle(self, *args, **o):
        url = o["docker"]
        if not url.startswith(("unix://", "tcp://")):
            raise CommandError("--docker: must start with unix:// or tcp://")
        problem = insecure_tcp_problem(
            docker_url=url,
            tls_ca=o["tls_ca"],
            tls_cert=o["tls_cert"],
            tls_key=o["tls_key"],
            allowed=o["allow_insecure_tcp"],
        )
        if problem:
            raise CommandError(f"--docker: {problem}")
        if url.startswith("tcp://") and not (o["tls_ca"] and o["tls_cert"] and o["tls_key"]):
            self.stderr.write("warning: a tcp:// engine without TLS files is unauthenticated")
        declared = parse_declared(o["declare_gpus"]) if o["declare_gpus"] else None
        slave = slave_register(
            name=o["name"],
            cluster=cluster_ensure(cluster_id=o["cluster"]),
            docker_url=url,
            host=o["host"],
            tls_ca=o["tls_ca"],
            tls_cert=o["tls_cert"],
            tls_key=o["tls_key"],
            declared_gpus=declared,
            allow_insecure_tcp=True,  # (checked above, with the command's own wording)
        )
        if not o["no_probe"]:
            slave = slave_probe(slave=slave, discover_gpus=True)
        state = "online" if slave.online else f"offline ({slave.offline_reason})"
        self.stdout.write(f"slave {slave.name} in cluster {slave.cluster_id}: {state}")

# The two commands of the README, plus developer helpers.
.PHONY: run test lint format engines bench soak

run:
	./scripts/run.sh

test:
	./scripts/test.sh

lint:
	.venv/bin/ruff check . && .venv/bin/ruff format --check .

format:
	.venv/bin/ruff format . && .venv/bin/ruff check --fix .

engines:
	./scripts/docker-engines.sh start

bench:
	.venv/bin/python bench/scheduler.py --queued 10000 --slaves 1000 --gpus-per-slave 8

# The production soak (scripts/soak.py): the deployment of deploy/systemd and deploy/nginx on
# PostgreSQL, both brokers, three engines, driven by the real clients while processes are
# killed. Needs what .ci/run starts (engines, PostgreSQL, Redis, nginx).
soak:
	./scripts/setup-venv.sh
	.venv/bin/python scripts/soak.py

"""The portal's settings with the benchmarks' URLs (bench/urls.py: the floor beside every
product route). Only bench/api.py's gunicorn runs with them; the product's URLs have no bench
route."""

from portal.settings import *  # noqa: F403

ROOT_URLCONF = "bench.urls"

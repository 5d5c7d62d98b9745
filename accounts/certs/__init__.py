"""Portal CA and login certificates for gpulab-cli (see docs/tls-frontend.md)."""

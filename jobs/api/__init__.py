"""GPULab v4.0 job endpoints (``/api/gpulab/v4.0/jobs...``) and the portal's job endpoints."""

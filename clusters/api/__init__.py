"""GPULab v4.0 ``clusters`` and ``slaves`` endpoints."""

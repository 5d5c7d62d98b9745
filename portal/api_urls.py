"""REST API routes (GPULab v4.0 under gpulab/v4.0/, portal endpoints beside them)."""

urlpatterns: list = []

"""Login certificate pages for gpulab-cli."""

urlpatterns: list = []

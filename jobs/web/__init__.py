"""Browser pages of jobs: views, forms."""

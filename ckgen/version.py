"""The ckgen version (pyproject.toml's), in generated files, manifests and tuning records."""

__version__ = "0.1.0"

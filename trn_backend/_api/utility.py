"""utility functions of the standard (being written)."""

__all__: list[str] = []

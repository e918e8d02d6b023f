"""Fixtures shared by the batch tests."""

from transform_host import cuda13_transform_host

__all__ = ["cuda13_transform_host"]

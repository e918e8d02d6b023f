"""Catalogs as data: model pairs, instance types, workload profiles."""

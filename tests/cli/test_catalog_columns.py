"""`peagle catalog` lines its columns up whatever their width: the Blackwell GPU names ("RTX PRO 6000 Blackwell")
and the longest instance types (ml.p6-b300.48xlarge) included."""

from __future__ import annotations

import re

from peagle.catalog import load_catalog
from peagle.cli import main

NUMBERS = ("GPUs", "GiB/GPU", "CC", "vCPUs", "host GiB", "$/hour")  # right-aligned under their header


def _instance_table(out: str) -> tuple[str, list[str]]:
    section = out.split("Instance types", 1)[1].split("\nProfiles:", 1)[0].strip("\n").splitlines()[1:]
    return section[0], [line for line in section[1:] if line.strip()]


def test_every_instance_row_lines_up_with_the_header(capsys):
    assert main(["catalog"]) == 0
    header, rows = _instance_table(capsys.readouterr().out)
    catalog = load_catalog()
    assert len(rows) == len(catalog.instances)
    assert any("Blackwell" in instance.gpu for instance in catalog.instances.values())  # the case this guards
    gpu_column = header.index(" GPU ") + 1
    number_ends = {name: header.index(name) + len(name) for name in NUMBERS}
    for row in rows:
        name = row.split()[0]
        instance = catalog.instances[name]
        assert row[gpu_column : gpu_column + len(instance.gpu)] == instance.gpu, row
        for column, end in number_ends.items():
            assert row[end - 1] != " " and row[end : end + 1] in ("", " "), f"{column} misaligned: {row!r}"
        # the numbers read back as the catalog's (a shifted column would split or merge them)
        numbers = re.split(r"\s+", row[gpu_column + len(instance.gpu) :].strip())
        assert float(numbers[0]) == instance.gpu_memory_gib and float(numbers[-1]) == round(
            instance.price_per_hour_usd, 3
        ), row

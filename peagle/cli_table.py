"""Columns as wide as their widest cell, for the tables a `peagle` command prints (catalog, simulate)."""

from __future__ import annotations

from collections.abc import Collection, Sequence


def table_lines(
    header: Sequence[object],
    rows: Sequence[Sequence[object]],
    *,
    right: Collection[int] = (),
    indent: str = "",
    gap: str = "  ",
) -> list[str]:
    """The header and the rows, each column padded to its widest cell (header included): left-aligned, or
    right-aligned for the column indexes in ``right`` (numbers). Trailing blanks are dropped."""
    table = [[str(cell) for cell in row] for row in [header, *rows]]
    widths = [max(len(row[column]) for row in table) for column in range(len(header))]
    return [
        indent
        + gap.join(
            cell.rjust(width) if column in right else cell.ljust(width)
            for column, (cell, width) in enumerate(zip(row, widths, strict=True))
        ).rstrip()
        for row in table
    ]

"""Human formatting of counts, FLOPs and bytes for tables (exact integers live elsewhere).

The rule: below the first unit the exact integer (``472``, ``512 B``); above it three
significant digits (``7.24 B``, ``13.5 GiB``, ``172 M``), where a value that rounds up
to the next unit is written in it (``999_999 -> 1.00 M``, never ``1000 K``).  Binary
units (KiB...) may show four digits between 1000 and 1023 (``1020 KiB``).  Counts use
K, M, B (billion), T; FLOPs KFLOPs ... EFLOPs; bytes KiB ... PiB.

>>> fmt_count(7_241_732_096), fmt_flops(1_700_000_000_000), fmt_bytes(13.5 * 2**30)
('7.24 B', '1.70 TFLOPs', '13.5 GiB')
>>> fmt_count(472), fmt_count(999_999), fmt_bytes(1023), fmt_flops(0)
('472', '1.00 M', '1023 B', '0 FLOPs')
"""

from __future__ import annotations

__all__ = ["Bytes", "Count", "Flops", "fmt_bytes", "fmt_count", "fmt_flops", "fmt_number"]

COUNT_UNITS = ("", "K", "M", "B", "T")
FLOP_UNITS = ("", "K", "M", "G", "T", "P", "E")
BYTE_UNITS = ("B", "KiB", "MiB", "GiB", "TiB", "PiB")


def _three(x: float) -> str:
    """``x`` (1 <= x) with three significant digits, integers from 100 on."""
    if x < 9.995:
        return f"{x:.2f}"
    if x < 99.95:
        return f"{x:.1f}"
    return f"{x:.0f}"


def fmt_number(n: float, units: tuple[str, ...], base: int = 1000, sep: str = " ") -> str:
    """``n`` scaled to the largest unit of ``units`` (powers of ``base``) that keeps it at
    least 1, with three significant digits; the exact integer below the first unit."""
    if n < 0:
        return "-" + fmt_number(-n, units, base, sep)
    if n < base and float(n).is_integer():
        text = str(int(n))
        return f"{text}{sep}{units[0]}" if units[0] else text
    i = 0
    x = float(n)
    while x >= base and i < len(units) - 1:
        x /= base
        i += 1
    text = _three(x) if x >= 1 else f"{x:.3g}"
    if float(text) >= base and i < len(units) - 1:  # rounded up into the next unit
        i += 1
        text = _three(float(text) / base)
    return f"{text}{sep}{units[i]}" if units[i] else text


def fmt_count(n: float) -> str:
    """Parameter and element counts: ``472``, ``1.50 K``, ``7.24 B``."""
    return fmt_number(n, COUNT_UNITS)


def fmt_flops(n: float, unit: str = "FLOPs") -> str:
    """FLOPs (or MACs with ``unit="MACs"``): ``512 FLOPs``, ``4.11 GFLOPs``, ``1.70 TFLOPs``."""
    return fmt_number(n, tuple(p + unit for p in FLOP_UNITS))


def fmt_bytes(n: float) -> str:
    """Bytes in binary units: ``512 B``, ``1.50 KiB``, ``13.5 GiB``."""
    return fmt_number(n, BYTE_UNITS, base=1024)


class _Shown(int):
    """An exact integer that prints in human units: ``str`` (and so every label) gives
    the formatted text, while ``repr``, arithmetic, comparisons and JSON see the integer
    (``json.dumps`` writes int subclasses as their digits).  Annotation values of the cost
    model are these, so a drawing shows ``params: 7.24 M`` and the JSON ``7241732``."""

    __slots__ = ()

    def __repr__(self) -> str:
        return int.__repr__(self)

    def __format__(self, spec: str) -> str:
        return str(self) if not spec else int(self).__format__(spec)


class Count(_Shown):
    """A count of elements (parameters): ``str(Count(7_241_732)) == "7.24 M"``."""

    __slots__ = ()

    def __str__(self) -> str:
        return fmt_count(self)


class Flops(_Shown):
    """FLOPs: ``str(Flops(1_700_000_000_000)) == "1.70 TFLOPs"``."""

    __slots__ = ()

    def __str__(self) -> str:
        return fmt_flops(self)


class Bytes(_Shown):
    """Bytes: ``str(Bytes(13.5 * 2**30)) == "13.5 GiB"``."""

    __slots__ = ()

    def __str__(self) -> str:
        return fmt_bytes(self)

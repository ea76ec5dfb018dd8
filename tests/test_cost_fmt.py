"""Human formatting of counts, FLOPs and bytes (tensorview.cost.fmt)."""

from __future__ import annotations

import pytest

from tensorview.cost.fmt import fmt_bytes, fmt_count, fmt_flops


@pytest.mark.parametrize(
    "n, text",
    [
        (0, "0"),
        (7, "7"),
        (472, "472"),
        (999, "999"),
        (1000, "1.00 K"),
        (1500, "1.50 K"),
        (9_994, "9.99 K"),
        (9_995, "10.0 K"),
        (99_949, "99.9 K"),
        (99_950, "100 K"),
        (999_499, "999 K"),
        (999_500, "1.00 M"),
        (25_557_032, "25.6 M"),
        (6_738_415_616, "6.74 B"),
        (7_241_732_096, "7.24 B"),
        (70_553_706_496, "70.6 B"),
        (1_000_000_000_000, "1.00 T"),
        (2_500_000_000_000_000, "2500 T"),
        (-1234, "-1.23 K"),
        (2.5, "2.50"),
        (0.5, "0.5"),
    ],
)
def test_count(n: float, text: str) -> None:
    assert fmt_count(n) == text


@pytest.mark.parametrize(
    "n, text",
    [
        (0, "0 FLOPs"),
        (512, "512 FLOPs"),
        (2048, "2.05 KFLOPs"),
        (4_089_184_256 * 2, "8.18 GFLOPs"),
        (1_700_001_742_848, "1.70 TFLOPs"),
        (3.2e18, "3.20 EFLOPs"),
        (999_999_999, "1.00 GFLOPs"),
    ],
)
def test_flops(n: float, text: str) -> None:
    assert fmt_flops(n) == text


def test_macs() -> None:
    assert fmt_flops(4_089_184_256, unit="MACs") == "4.09 GMACs"


@pytest.mark.parametrize(
    "n, text",
    [
        (0, "0 B"),
        (512, "512 B"),
        (1023, "1023 B"),
        (1024, "1.00 KiB"),
        (1536, "1.50 KiB"),
        (1000 * 1024, "1000 KiB"),
        (1023 * 1024, "1023 KiB"),
        (int(1023.7 * 1024), "1.00 MiB"),
        (int(13.5 * 2**30), "13.5 GiB"),
        (26_953_662_464, "25.1 GiB"),
        (5 * 2**50, "5.00 PiB"),
    ],
)
def test_bytes(n: float, text: str) -> None:
    assert fmt_bytes(n) == text

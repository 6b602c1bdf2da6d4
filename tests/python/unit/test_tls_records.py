"""Which libssl tls_records.py may call into: the one the process has mapped, never a guess between two."""

from __future__ import annotations

from lanefetch.engine.tls_records import loaded_libssl

LINE = "7f2871fb3000-7f2871fd0000 r--p 00000000 fe:01 1234  "


def test_the_one_libssl_mapped_is_found() -> None:
    maps = "\n".join([
        LINE + "/usr/lib/x86_64-linux-gnu/libssl.so.3",
        LINE + "/usr/lib/x86_64-linux-gnu/libssl.so.3",  # each segment of it has a line
        LINE + "/usr/lib/x86_64-linux-gnu/libcrypto.so.3",
        "7ffd1000-7ffd2000 rw-p 00000000 00:00 0",  # anonymous: no path
        LINE + "[heap]",
    ])
    assert loaded_libssl(maps) == "/usr/lib/x86_64-linux-gnu/libssl.so.3"


def test_none_or_two_libssls_are_no_answer() -> None:
    assert loaded_libssl(LINE + "/usr/lib/x86_64-linux-gnu/libcrypto.so.3") is None
    assert loaded_libssl("\n".join([LINE + "/usr/lib/x86_64-linux-gnu/libssl.so.3",
                                    LINE + "/opt/other/lib/libssl.so.1.1"])) is None

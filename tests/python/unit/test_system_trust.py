"""When the helper reads its trust store again (engine/system_trust.py): at most every CHECK_EVERY seconds it looks
at the store's files, and only a change makes a new context (the bundle is never read per connection)."""

from __future__ import annotations

import os
from pathlib import Path

from lanefetch.engine.system_trust import CHECK_EVERY, StoreWatch, stamp


def test_the_store_is_looked_at_at_most_every_check_interval_and_a_change_is_told_once() -> None:
    watch = StoreWatch()
    a: tuple[tuple[str, tuple[int, int, int, int] | None], ...] = (("/b", (1, 2, 3, 4)),)
    b: tuple[tuple[str, tuple[int, int, int, int] | None], ...] = (("/b", (1, 5, 3, 4)),)
    assert watch.due(100.0)
    assert not watch.changed(a, 100.0), "the first stamp is the store the context was made from"
    assert not watch.due(100.0 + CHECK_EVERY / 2), "new connections meanwhile do not look again"
    assert watch.due(100.0 + CHECK_EVERY)
    assert not watch.changed(a, 100.0 + CHECK_EVERY)
    assert watch.changed(b, 100.0 + 2 * CHECK_EVERY)
    assert not watch.changed(b, 100.0 + 3 * CHECK_EVERY), "told once: the context made then read the new store"


def test_a_stamp_changes_with_a_replaced_bundle_a_rewritten_one_and_a_directorys_entries(tmp_path: Path) -> None:
    bundle, directory = tmp_path / "ca-certificates.crt", tmp_path / "certs"
    bundle.write_text("one")
    directory.mkdir()
    paths = [str(bundle), str(directory), str(tmp_path / "missing")]
    first = stamp(paths)
    assert first[2] == (str(tmp_path / "missing"), None)
    assert stamp(paths) == first
    replacement = tmp_path / "new"
    replacement.write_text("one")
    os.replace(replacement, bundle)  # update-ca-certificates: a new file renamed over the old one
    second = stamp(paths)
    assert second != first
    bundle.write_text("two, longer")  # rewritten in place
    assert stamp(paths) != second
    os.utime(directory, ns=(0, 0))  # (so a new entry's mtime differs whatever the file system's clock tick)
    before_entry = stamp(paths)
    (directory / "abcdef01.0").symlink_to(bundle)  # c_rehash: a new hashed name
    assert stamp(paths) != before_entry

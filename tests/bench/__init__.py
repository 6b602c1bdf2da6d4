"""Benchmarks and the network lab they run in (namespaces, link emulator, real servers)."""

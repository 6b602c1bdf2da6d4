"""Looking up header fields in an ordered list of (name, value) pairs, case-insensitively."""

from __future__ import annotations

Headers = list[tuple[str, str]]


class FieldLookup:
    """Mixin for anything that carries `headers`."""

    headers: Headers

    def get_all(self, name: str) -> list[str]:
        lname = name.lower()
        return [v for k, v in self.headers if k.lower() == lname]

    def get(self, name: str) -> str | None:
        """All values of the field joined as one (RFC 9110 §5.3), or None if absent."""
        values = self.get_all(name)
        return ", ".join(values) if values else None

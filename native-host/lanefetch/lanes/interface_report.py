"""The interfaces lanes may use, as the user manages them: every interface found here (and every one the policy
names that is not here now) with its policy, today's bytes and why it cannot carry a lane; and a change of one
interface's policy, its input checked first. `lanefetch interfaces` and the extension's options page (through the
helper) both use this, on the same policy file."""

from __future__ import annotations

import math
from dataclasses import dataclass

from .interfaces import Interface, InterfacePolicy, PolicyStore, binding_for, discover

NOT_PRESENT = "not present"


@dataclass(frozen=True)
class InterfaceRow:
    name: str
    present: bool
    up: bool
    addresses: tuple[str, ...]
    policy: InterfacePolicy
    bytes_today: int
    why_not: str | None  # None: may carry a lane now (metered ones only when named, like `fetch --interface`)
    binding: str | None  # how its sockets would be bound ("device" or "source address"); None when not present


def report(store: PolicyStore, found: list[Interface] | None = None) -> list[InterfaceRow]:
    found = discover() if found is None else found
    rows = [
        InterfaceRow(i.name, True, i.up, i.addresses, store.policy(i.name), store.used_today(i.name),
                     store.why_not(i, allow_metered=False), binding_for(i).method)
        for i in found
    ]
    here = {i.name for i in found}
    rows += [InterfaceRow(name, False, False, (), store.policy(name), store.used_today(name), NOT_PRESENT, None)
             for name in sorted(store.policies) if name not in here]
    return rows


@dataclass(frozen=True)
class PolicyChange:
    """What to change in one interface's policy; None leaves a field as it is. daily_cap_bytes 0 removes the cap."""

    enabled: bool | None = None
    weight: float | None = None
    metered: bool | None = None
    daily_cap_bytes: int | None = None

    def check(self) -> None:
        """ValueError saying what is wrong, before anything is changed."""
        if self.weight is not None and not (math.isfinite(self.weight) and self.weight > 0):
            raise ValueError(f"weight must be a number above 0, got {self.weight!r}")
        if self.daily_cap_bytes is not None and self.daily_cap_bytes < 0:
            raise ValueError(f"daily cap must be 0 (no cap) or more bytes, got {self.daily_cap_bytes!r}")

    def applied_to(self, p: InterfacePolicy) -> InterfacePolicy:
        return InterfacePolicy(
            enabled=p.enabled if self.enabled is None else self.enabled,
            weight=p.weight if self.weight is None else self.weight,
            metered=p.metered if self.metered is None else self.metered,
            daily_cap_bytes=p.daily_cap_bytes if self.daily_cap_bytes is None else (self.daily_cap_bytes or None),
        )


def change_policy(store: PolicyStore, name: str, change: PolicyChange, found: list[Interface] | None = None,
                  *, only_known: bool = True) -> InterfacePolicy:
    """Set and save one interface's policy. With only_known, the name must be an interface found here or one the
    policy already names (the options page offers only those); the CLI may name one that appears later.
    ValueError (bad input) or OSError (the file) leave the file as it was."""
    change.check()
    if only_known:
        found = discover() if found is None else found
        known = {i.name for i in found} | set(store.policies)
        if name not in known:
            raise ValueError(f"no interface named {name!r} (have: {', '.join(sorted(known)) or 'none'})")
    policy = change.applied_to(store.policy(name))
    store.set_policy(name, policy)
    store.save()
    return policy


@dataclass(frozen=True)
class PolicyAnswer:
    """What the options page is told: the rows (None: the policy file cannot be read), the file, the error that
    refused a change (nothing changed then), and whether the policy changed."""

    rows: list[InterfaceRow] | None
    policy_file: str
    error: str | None = None
    changed: bool = False


def list_or_change(name: str | None = None, change: PolicyChange | None = None) -> PolicyAnswer:
    """The policy file read afresh: change one interface's policy first (if asked), then list them all."""
    try:
        store = PolicyStore.load()
    except ValueError as e:
        return PolicyAnswer(None, str(PolicyStore().path), str(e))
    found = discover()
    error = None
    if change is not None and name is not None:
        try:
            change_policy(store, name, change, found)
        except (ValueError, OSError) as e:
            error = str(e)
    return PolicyAnswer(report(store, found), str(store.path), error, change is not None and error is None)

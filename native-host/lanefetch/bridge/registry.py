"""The Windows registry, as much of it as host registration needs: a key's default value. Browsers on
Windows find a native-messaging host through HKCU (or HKLM)\\<browser key>\\NativeMessagingHosts\\<name>,
whose default value is the full path of the manifest file.

`Registry` is the interface the installer and the doctor use; `WindowsRegistry` is the real one (winreg, only
importable on Windows). Tests use their own implementation of the interface."""

from __future__ import annotations

import sys
from typing import Literal, Protocol

if sys.platform == "win32":
    import winreg

Hive = Literal["HKCU", "HKLM"]


class Registry(Protocol):
    def set_default(self, hive: Hive, key: str, value: str) -> None: ...

    def get_default(self, hive: Hive, key: str) -> str | None: ...

    def delete_key(self, hive: Hive, key: str) -> bool:
        """Remove the key (which has no subkeys); False when it was not there."""
        ...


class WindowsRegistry:
    """Registry access through winreg, in the 64-bit view (the one browsers read)."""

    def __init__(self) -> None:
        if sys.platform != "win32":
            raise OSError("the Windows registry exists only on Windows")

    if sys.platform == "win32":

        def _root(self, hive: Hive) -> int:
            return winreg.HKEY_CURRENT_USER if hive == "HKCU" else winreg.HKEY_LOCAL_MACHINE

        def set_default(self, hive: Hive, key: str, value: str) -> None:
            access = winreg.KEY_WRITE | winreg.KEY_WOW64_64KEY
            with winreg.CreateKeyEx(self._root(hive), key, 0, access) as k:
                winreg.SetValueEx(k, "", 0, winreg.REG_SZ, value)

        def get_default(self, hive: Hive, key: str) -> str | None:
            try:
                with winreg.OpenKey(self._root(hive), key, 0, winreg.KEY_READ | winreg.KEY_WOW64_64KEY) as k:
                    value, kind = winreg.QueryValueEx(k, "")
            except FileNotFoundError:
                return None
            return value if kind in (winreg.REG_SZ, winreg.REG_EXPAND_SZ) and isinstance(value, str) else None

        def delete_key(self, hive: Hive, key: str) -> bool:
            try:
                winreg.DeleteKeyEx(self._root(hive), key, winreg.KEY_WOW64_64KEY, 0)
            except FileNotFoundError:
                return False
            return True

    else:  # never constructed here (see __init__); present so the type is a Registry on every OS

        def set_default(self, hive: Hive, key: str, value: str) -> None:
            raise OSError("the Windows registry exists only on Windows")

        def get_default(self, hive: Hive, key: str) -> str | None:
            raise OSError("the Windows registry exists only on Windows")

        def delete_key(self, hive: Hive, key: str) -> bool:
            raise OSError("the Windows registry exists only on Windows")

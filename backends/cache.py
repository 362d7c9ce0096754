"""The kernel cache: compiled binaries in memory and on disk, shared by every backend.

Disk entries live under `LT_CACHE_DIR` (default: the user cache dir, `~/.cache/lazytensor`),
one file per key, written to a temporary file and renamed into place, so a reader never sees a
half-written entry and two processes writing the same key both succeed. Each entry carries a
checksum: a corrupt or truncated one is recompiled with a warning. An unwritable directory, or one
that other users can write (they could plant code we would run), degrades to memory only, with
a warning. The directory is capped at `LT_CACHE_MAX_BYTES` (default 512 MB): a read marks an
entry used (its modification time), and a write that takes the directory past the cap removes
the least recently used entries down to 3/4 of it.
"""
from __future__ import annotations

import hashlib
import os
import stat
import tempfile
import warnings
from pathlib import Path
from typing import Callable, Optional

from .protocol import Stats

_MAGIC = b"LTKC0001"
_DIGEST = 32
DEFAULT_MAX_BYTES = 512 << 20


def max_cache_bytes() -> int:
    """The disk cache's size cap: LT_CACHE_MAX_BYTES, or 512 MB."""
    value = os.environ.get("LT_CACHE_MAX_BYTES", "")
    try:
        return int(value) if value else DEFAULT_MAX_BYTES
    except ValueError:
        warnings.warn(f"lazytensor: LT_CACHE_MAX_BYTES={value!r} is not a number of bytes; using "
                      f"{DEFAULT_MAX_BYTES}")
        return DEFAULT_MAX_BYTES


def default_cache_dir() -> Path:
    if os.environ.get("LT_CACHE_DIR"):
        return Path(os.environ["LT_CACHE_DIR"])
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "lazytensor"


def cache_key(*parts: str) -> str:
    digest = hashlib.sha256()
    for part in parts:
        digest.update(part.encode())
        digest.update(b"\0")
    return digest.hexdigest()


class KernelCache:
    def __init__(self, stats: Stats, directory: Optional[Path] = None, max_bytes: Optional[int] = None):
        self.stats = stats
        self.memory: dict[str, bytes] = {}
        self.directory = _usable_directory(directory if directory is not None else default_cache_dir())
        self.max_bytes = max_cache_bytes() if max_bytes is None else max_bytes
        self.disk_bytes: Optional[int] = None   # the directory's size as last counted, plus our writes

    def clear(self) -> None:
        """Forget every entry, in memory and on disk (other processes recompile what they need)."""
        self.memory.clear()
        if self.directory is not None:
            for path in self.directory.glob("*.bin"):
                path.unlink(missing_ok=True)
            self.disk_bytes = None

    def get_or_compile(self, key: str, compile: Callable[[], bytes]) -> bytes:
        if key in self.memory:
            self.stats.memory_cache_hits += 1
            return self.memory[key]
        binary = self._read(key)
        if binary is not None:
            self.stats.disk_cache_hits += 1
        else:
            binary = compile()
            self._write(key, binary)
        self.memory[key] = binary
        return binary

    def _path(self, key: str) -> Path:
        assert self.directory is not None
        return self.directory / f"{key}.bin"

    def _read(self, key: str) -> Optional[bytes]:
        if self.directory is None:
            return None
        path = self._path(key)
        try:
            data = path.read_bytes()
            os.utime(path)   # used now: the last to be evicted
        except FileNotFoundError:
            return None
        except OSError as error:
            warnings.warn(f"lazytensor: cannot read kernel cache entry {path}: {error}; recompiling")
            return None
        payload = data[len(_MAGIC) + _DIGEST:]
        if (not data.startswith(_MAGIC)
                or data[len(_MAGIC):len(_MAGIC) + _DIGEST] != hashlib.sha256(payload).digest()):
            warnings.warn(f"lazytensor: kernel cache entry {path} is corrupt; recompiling it")
            return None
        return payload

    def _write(self, key: str, binary: bytes) -> None:
        if self.directory is None:
            return
        data = _MAGIC + hashlib.sha256(binary).digest() + binary
        try:
            fd, tmp = tempfile.mkstemp(dir=self.directory, prefix=f".{key[:16]}.", suffix=".tmp")
            try:
                with os.fdopen(fd, "wb") as f:
                    f.write(data)
                os.replace(tmp, self._path(key))
            except BaseException:
                os.unlink(tmp)
                raise
        except OSError as error:
            warnings.warn(f"lazytensor: cannot write to the kernel cache {self.directory} ({error}); "
                          "using the in-memory cache only for this process")
            self.directory = None
            return
        # the directory is counted once, then our writes added: a scan per write would make
        # filling a cache of n kernels cost n^2 (other processes' writes are seen at the next scan)
        if self.disk_bytes is None:
            self.disk_bytes = sum(size for _, size, _ in self._entries())
        self.disk_bytes += len(data)
        if self.disk_bytes > self.max_bytes:
            self.disk_bytes = self._evict()

    def _entries(self) -> list[tuple[float, int, Path]]:
        """(last use, size, path) of every entry on disk. (Another process may remove one while
        we look: a missing file is skipped.)"""
        entries = []
        for path in self.directory.glob("*.bin"):
            try:
                info = path.stat()
            except FileNotFoundError:
                continue
            entries.append((info.st_mtime, info.st_size, path))
        return entries

    def _evict(self) -> int:
        """Past the size cap: remove the least recently used entries down to 3/4 of it (a file
        another process removed first is fine). Returns the size left."""
        entries = self._entries()
        total = sum(size for _, size, _ in entries)
        if total <= self.max_bytes:
            return total
        for _, size, path in sorted(entries, key=lambda e: e[0]):
            if total <= self.max_bytes * 3 // 4:
                break
            path.unlink(missing_ok=True)
            total -= size
        return total


def _usable_directory(directory: Path) -> Optional[Path]:
    """The cache directory, created 0700; None (memory only) where it cannot be used safely."""
    try:
        directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        info = directory.stat()
    except OSError as error:
        warnings.warn(f"lazytensor: cannot create the kernel cache directory {directory} ({error}); "
                      "using the in-memory cache only. Set LT_CACHE_DIR to a writable directory.")
        return None
    if info.st_mode & (stat.S_IWGRP | stat.S_IWOTH) or (hasattr(os, "getuid") and info.st_uid != os.getuid()):
        warnings.warn(f"lazytensor: the kernel cache directory {directory} is writable by other users "
                      "or not owned by you; not loading code from it (memory cache only). "
                      "Set LT_CACHE_DIR to a private directory.")
        return None
    if not os.access(directory, os.W_OK | os.X_OK):
        warnings.warn(f"lazytensor: the kernel cache directory {directory} is not writable; "
                      "using the in-memory cache only. Set LT_CACHE_DIR to a writable directory.")
        return None
    return directory

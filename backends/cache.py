"""The kernel cache: compiled binaries in memory and on disk, shared by every backend.

Disk entries live under `LT_CACHE_DIR` (default: the user cache dir, `~/.cache/lazytensor`),
one file per key, written to a temporary file and renamed into place, so a reader never sees a
half-written entry and two processes writing the same key both succeed.

A corrupt or unwritable cache must not break a program:
- Each entry carries a checksum of its key and payload, so a damaged entry, or another key's
  entry copied or linked over it, is corrupt. An entry is opened without following symbolic
  links, and only a regular file is read. A corrupt entry is recompiled with a warning, and
  rewritten.
- A binary read from disk is loaded before it is trusted (`load_or_compile`): a backend checks
  what it can first (the CPU checks the ELF structure of its objects, see cpu/objcheck.py),
  and a cached binary that does not load is recompiled and rewritten like a corrupt entry.
- A directory we cannot write (a shared, pre-populated cache; a read-only mount) is read, never
  written. One that other users can write, or that is not ours, is not used at all (they could
  plant code we would run): memory only, with a warning.
- The directory is capped at `LT_CACHE_MAX_BYTES` (default 512 MB): a read marks an entry used
  (its modification time), and a write that takes the directory past the cap removes the least
  recently used entries down to 3/4 of it. Temporary files count towards the cap; one older
  than an hour is a killed writer's and is removed whenever the directory is scanned.
"""
from __future__ import annotations

import errno
import hashlib
import os
import stat
import tempfile
import time
import warnings
from pathlib import Path
from typing import Callable, Optional, TypeVar

from .lru import LRU
from .protocol import Stats

_MAGIC = b"LTKC0002"     # 0002: the checksum covers the key
_FORMAT = b"LTKC"        # an entry of another format version is recompiled without a warning
_DIGEST = 32
_STALE_SECONDS = 3600    # a live writer's temporary file is seconds old
DEFAULT_MAX_BYTES = 512 << 20
MEMORY_ENTRIES = 1024   # binaries kept in memory (one process's recent kernels)...
MEMORY_BYTES = 32 << 20  # ... and their bytes (a PoCL binary is ~70 KB, a cpu object ~5 KB)
Loaded = TypeVar("Loaded")


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
        # the binaries loaded in this process, for a kernel loaded again after the runtime forgot
        # it (bounded like the runtime's kernels: a process meeting ever new shapes stays bounded)
        self.memory: LRU[bytes] = LRU(MEMORY_ENTRIES, weigh=len, max_weight=MEMORY_BYTES)
        self.directory, self.writable = _open_directory(directory if directory is not None else default_cache_dir())
        self.max_bytes = max_cache_bytes() if max_bytes is None else max_bytes
        self.disk_bytes: Optional[int] = None   # the directory's size as last counted, plus our writes

    def clear(self) -> None:
        """Forget every entry, in memory and on disk (other processes recompile what they need).
        What cannot be removed (a read-only cache, an entry that is a directory) is left, with
        one warning."""
        self.memory.clear()
        if self.directory is None:
            return
        self.disk_bytes = None
        left = []
        for path in [*self.directory.glob("*.bin"), *self._stale_temporaries()]:
            try:
                path.unlink(missing_ok=True)
            except OSError:
                left.append(path.name)
        if left:
            warnings.warn(f"lazytensor: could not remove {len(left)} kernel cache entries from {self.directory} "
                          f"({', '.join(left[:3])}{', ...' if len(left) > 3 else ''})")

    def get_or_compile(self, key: str, compile: Callable[[], bytes]) -> bytes:
        """The binary for `key`: from memory, from disk, or compiled now (and written)."""
        return self.load_or_compile(key, compile, lambda binary: binary)

    def load_or_compile(self, key: str, compile: Callable[[], bytes],
                        load: Callable[[bytes], Loaded]) -> Loaded:
        """`load(binary)` of the binary for `key`: from memory, from disk, or compiled now.

        Bytes from disk are not trusted until they load: a cached binary that fails to (it is
        damaged, or not what its key says: `load` raised) is compiled again, with a warning, and
        its entry rewritten, so one bad entry costs one compile, not every run. A freshly
        compiled binary that fails to load is a real error: it is raised, and not written.
        (Any exception counts: each device's loader has its own, pyopencl's and pycuda's are not
        RuntimeErrors, and the fresh compile tells a bad entry from a real error.)
        """
        known = self.memory.get(key)
        if known is not None:   # (loaded once already in this process)
            self.stats.memory_cache_hits += 1
            return load(known)
        binary = self._read(key)
        if binary is not None:
            try:
                loaded = load(binary)
            except Exception as error:
                self._warn_corrupt(key, f"it does not load: {error}")
            else:
                self.stats.disk_cache_hits += 1
                self.memory.put(key, binary)
                return loaded
        binary = compile()
        loaded = load(binary)
        self._write(key, binary)
        self.memory.put(key, binary)
        return loaded

    def put(self, key: str, binary: bytes) -> None:
        """Keep a binary compiled elsewhere (a batch compiled side by side) for `key`."""
        self._write(key, binary)
        self.memory.put(key, binary)

    def has(self, key: str) -> bool:
        """Whether a binary for `key` is in memory or on disk (not checked: a load checks it)."""
        return key in self.memory or (self.directory is not None and self._path(key).is_file())

    def _path(self, key: str) -> Path:
        assert self.directory is not None
        return self.directory / f"{key}.bin"

    def _warn_corrupt(self, key: str, reason: str) -> None:
        warnings.warn(f"lazytensor: kernel cache entry {self._path(key)} is corrupt ({reason}); recompiling it")

    def _read(self, key: str) -> Optional[bytes]:
        """The payload of the entry for `key`, or None (none, or not usable: warned)."""
        if self.directory is None:
            return None
        path = self._path(key)
        try:
            data = _read_regular_file(path)
        except FileNotFoundError:
            return None
        except ValueError as error:
            self._warn_corrupt(key, str(error))
            return None
        except OSError as error:
            warnings.warn(f"lazytensor: cannot read kernel cache entry {path}: {error}; recompiling")
            return None
        try:
            return _unseal(key, data)
        except ValueError as error:
            self._warn_corrupt(key, str(error))
            return None

    def _write(self, key: str, binary: bytes) -> None:
        """Put the entry on disk, atomically. A directory that refuses writes is not written to
        again by this process (its entries are still read); an entry path that refuses (a
        directory in its place) is skipped alone."""
        if self.directory is None or not self.writable:
            return
        data = _seal(key, binary)
        try:
            temporary = _write_temporary(self.directory, key, data)
        except OSError as error:
            warnings.warn(f"lazytensor: cannot write to the kernel cache {self.directory} ({error}); "
                          "not writing to it again in this process (its entries are still read)")
            self.writable = False
            return
        try:
            os.replace(temporary, self._path(key))
        except OSError as error:
            _remove(temporary)
            warnings.warn(f"lazytensor: cannot write kernel cache entry {self._path(key)} ({error}); "
                          "it is recompiled in each process until that path is freed")
            return
        self._count_write(len(data))

    def _count_write(self, size: int) -> None:
        """Add a write to the directory's size, evicting past the cap. The directory is counted
        once, then our writes added: a scan per write would make filling a cache of n kernels
        cost n^2 (other processes' writes are seen at the next scan)."""
        if self.disk_bytes is None:
            entries, temporary_bytes = self._scan()
            self.disk_bytes = sum(size for _, size, _ in entries) + temporary_bytes
        self.disk_bytes += size
        if self.disk_bytes > self.max_bytes:
            self.disk_bytes = self._evict()

    def _scan(self) -> tuple[list[tuple[float, int, Path]], int]:
        """(last use, size, path) of every entry on disk, and the bytes of other writers'
        temporary files; a stale temporary file (its writer was killed) is removed. (Another
        process may remove a file while we look: a missing file is skipped.)"""
        assert self.directory is not None
        for path in self._stale_temporaries():
            _remove(path)
        entries = []
        for path in self.directory.glob("*.bin"):
            info = _lstat(path)
            if info is not None and not stat.S_ISDIR(info.st_mode):
                entries.append((info.st_mtime, info.st_size, path))
        temporary_bytes = 0
        for path in self.directory.glob(".*.tmp"):
            info = _lstat(path)
            temporary_bytes += info.st_size if info is not None else 0
        return entries, temporary_bytes

    def _stale_temporaries(self) -> list[Path]:
        """Temporary files older than an hour: left by a writer killed before its rename."""
        assert self.directory is not None
        now = time.time()
        stale = []
        for path in self.directory.glob(".*.tmp"):
            info = _lstat(path)
            if info is not None and now - info.st_mtime > _STALE_SECONDS:
                stale.append(path)
        return stale

    def _evict(self) -> int:
        """Past the size cap: remove the least recently used entries down to 3/4 of it (a file
        another process removed first is fine; live writers' temporary files count, but are
        theirs). Returns the size left."""
        entries, temporary_bytes = self._scan()
        total = sum(size for _, size, _ in entries) + temporary_bytes
        if total <= self.max_bytes:
            return total
        for _, size, path in sorted(entries, key=lambda e: e[0]):
            if total <= self.max_bytes * 3 // 4:
                break
            if _remove(path):
                total -= size
        return total


def _seal(key: str, binary: bytes) -> bytes:
    """An entry's bytes: format, checksum of key and payload, payload."""
    return _MAGIC + _checksum(key, binary) + binary


def _unseal(key: str, data: bytes) -> Optional[bytes]:
    """The payload of an entry written for `key`; None for another format version (stale, not
    damaged); ValueError when damaged or written for another key."""
    if len(data) < len(_MAGIC) + _DIGEST:
        raise ValueError(f"{len(data)} bytes, shorter than its header")
    if not data.startswith(_MAGIC):
        if data.startswith(_FORMAT) and data[len(_FORMAT):len(_MAGIC)].isdigit():
            return None
        raise ValueError("not a kernel cache entry")
    payload = data[len(_MAGIC) + _DIGEST:]
    if data[len(_MAGIC):len(_MAGIC) + _DIGEST] != _checksum(key, payload):
        raise ValueError("checksum mismatch: damaged, truncated, or another kernel's entry")
    return payload


def _checksum(key: str, payload: bytes) -> bytes:
    """Covers the key too: an entry copied or linked over another key's is caught."""
    return hashlib.sha256(key.encode() + b"\0" + payload).digest()


def _read_regular_file(path: Path) -> bytes:
    """The bytes of `path`, and mark it used now (for the eviction order; where the file system
    allows). A symbolic link is not followed (one planted in the cache must not make us read,
    and run, a file elsewhere), and only a regular file is read (a FIFO would block, a device
    never end): ValueError otherwise."""
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags)
    except OSError as error:
        if error.errno == errno.ELOOP:
            raise ValueError("a symbolic link") from None
        raise
    with os.fdopen(fd, "rb") as file:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise ValueError("not a regular file")
        if os.path.islink(path):   # (where O_NOFOLLOW does not exist)
            raise ValueError("a symbolic link")
        data = file.read()
        _mark_used(fd if os.utime in os.supports_fd else path)
    return data


def _mark_used(file) -> None:
    """Set the modification time to now: the least recently used entries are evicted first. A
    read-only cache cannot record it, and needs not (nothing is written, nothing evicted)."""
    try:
        os.utime(file)
    except OSError:
        pass


def _write_temporary(directory: Path, key: str, data: bytes) -> str:
    """A new temporary file in `directory` holding `data`, named `.{key}.*.tmp` (found by the
    scans whatever becomes of its writer)."""
    fd, temporary = tempfile.mkstemp(dir=directory, prefix=f".{key[:16]}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as file:
            file.write(data)
    except BaseException:
        _remove(temporary)
        raise
    return temporary


def _remove(path) -> bool:
    """Remove a file if we can; False where it could not be (gone already counts as removed)."""
    try:
        os.unlink(path)
    except FileNotFoundError:
        return True
    except OSError:
        return False
    return True


def _lstat(path: Path) -> Optional[os.stat_result]:
    try:
        return path.lstat()
    except OSError:
        return None


def _open_directory(directory: Path) -> tuple[Optional[Path], bool]:
    """The cache directory (created 0700) and whether we may write it. None (memory only, with a
    warning) where it cannot be used safely: it cannot be made or read, or others could plant
    code in it. A directory we cannot write is read (a shared, pre-populated cache; a read-only
    mount): a deliberate setup, so without a warning."""
    try:
        directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        info = directory.stat()
    except OSError as error:
        warnings.warn(f"lazytensor: cannot create the kernel cache directory {directory} ({error}); "
                      "using the in-memory cache only. Set LT_CACHE_DIR to a writable directory.")
        return None, False
    if info.st_mode & (stat.S_IWGRP | stat.S_IWOTH) or (hasattr(os, "getuid") and info.st_uid != os.getuid()):
        warnings.warn(f"lazytensor: the kernel cache directory {directory} is writable by other users "
                      "or not owned by you; not loading code from it (memory cache only). "
                      "Set LT_CACHE_DIR to a private directory.")
        return None, False
    if not os.access(directory, os.R_OK | os.X_OK):
        warnings.warn(f"lazytensor: cannot read the kernel cache directory {directory}; using the "
                      "in-memory cache only. Set LT_CACHE_DIR to a readable directory.")
        return None, False
    return directory, os.access(directory, os.W_OK | os.X_OK)

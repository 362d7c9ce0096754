"""A structural check of a kernel's ELF object file, in Python, before LLVM ever sees it.

LLVM's object reader and MCJIT's linker trust their input: a section header past the end of the
file, a string table without its terminating NUL, a relocation naming a symbol that does not
exist or of a type the linker does not know make them abort or segfault the process, where a
Python program expects an exception. An object read back from the disk cache passed a checksum,
but that proves only that the bytes are the ones written, not that they were an object for this
machine (a bug, another tool, a hand-made entry). So `CPUDevice.load` checks every object here
first, and a failure is a ValueError the kernel cache answers by compiling the kernel again.

What this proves: the object is a relocatable ELF file for this machine whose every table lies
inside the file and whose every index points at something that exists, and it defines the
kernel's function. It does not prove the code is the kernel's: the cache's checksum, which
covers the entry's key, is there for that. (On hosts whose objects are not ELF, macOS's Mach-O
and Windows' COFF, nothing is checked.)
"""
from __future__ import annotations

import functools
import platform
import struct
import sys
from dataclasses import dataclass
from typing import Optional

# e_ident and header values (the ELF specification's names)
_MAGIC = b"\x7fELF"
_ELF_HOST = not sys.platform.startswith(("darwin", "win32", "cygwin"))
_ELFCLASS64 = 2
_ELFDATA = {"little": 1, "big": 2}
_ET_REL = 1
_MACHINES = {"x86_64": 62, "amd64": 62, "aarch64": 183, "arm64": 183, "ppc64le": 21, "ppc64": 21,
             "s390x": 22, "riscv64": 243, "loongarch64": 258}
# section types and flags
_SHT_NULL, _SHT_SYMTAB, _SHT_STRTAB, _SHT_RELA, _SHT_NOBITS, _SHT_REL = 0, 2, 3, 4, 8, 9
_SHF_EXECINSTR = 0x4
# flags a kernel's sections may carry: write, alloc, execinstr, merge, strings, info link, link
# order, os-nonconforming, group, and the processor-specific bits (x86-64's large, ...). Not TLS
# (MCJIT aborts: "allocation of TLS not implemented") nor compressed.
_SHF_ALLOWED = 0x1 | 0x2 | 0x4 | 0x10 | 0x20 | 0x40 | 0x80 | 0x100 | 0x200 | 0xF000_0000
_SHN_UNDEF, _SHN_LORESERVE, _SHN_ABS, _SHN_COMMON = 0, 0xFF00, 0xFFF1, 0xFFF2
# symbols
_STT_FUNC = 2
_STT_TLS, _STT_GNU_IFUNC = 6, 10   # thread-local data and indirect functions: never in a kernel
_STB_GLOBAL, _STB_WEAK = 1, 2
# Relocation types MCJIT's x86-64 linker implements, with the bytes each one writes (a type it
# does not implement reaches llvm_unreachable). Kernels use GOTPC64, GOTOFF64 and GOT64 (large code
# model: constants, and the address of a libm function).
_X86_64_RELOCATIONS = {0: 0, 1: 8, 2: 4, 4: 4, 9: 4, 10: 4, 11: 4, 24: 8, 25: 8, 26: 4, 27: 8, 29: 8,
                       41: 4, 42: 4}
# No kernel needs more: an alignment or zero-filled section beyond these is a damaged header
# (MCJIT would try to allocate it).
_MAX_ALIGNMENT = 1 << 16
_MAX_NOBITS = 1 << 24


@dataclass(frozen=True)
class _Section:
    index: int
    name: int
    type: int
    flags: int
    offset: int
    size: int
    link: int
    info: int
    align: int
    entsize: int


@dataclass(frozen=True)
class _Symbol:
    name: bytes
    info: int
    shndx: int
    value: int
    size: int


def check_object(binary: bytes, name: str) -> None:
    """Raise ValueError, saying what is wrong, unless `binary` is a well-formed relocatable ELF
    object for this machine that defines the function `name`."""
    if not _ELF_HOST:
        return
    endian = "<" if sys.byteorder == "little" else ">"
    header = _check_header(binary, endian)
    sections = _read_sections(binary, endian, header)
    _check_section_names(binary, sections, header["shstrndx"])
    symtab = _symbol_table(sections)
    symbols = _read_symbols(binary, endian, sections, symtab)
    _check_relocations(binary, endian, header["machine"], sections, symtab, len(symbols))
    _check_defines(symbols, sections, name)


def _check_header(binary: bytes, endian: str) -> dict:
    """The ELF header's fields, once they say: 64-bit, this machine's byte order and
    architecture, relocatable, a section header table of sane size and no program headers."""
    if len(binary) < 64 or not binary.startswith(_MAGIC):
        raise ValueError("not an ELF object file")
    if binary[4] != _ELFCLASS64 or binary[5] != _ELFDATA[sys.byteorder] or binary[6] != 1:
        raise ValueError(f"ELF class/byte order/version {tuple(binary[4:7])} is not this machine's")
    fields = ("type", "machine", "version", "entry", "phoff", "shoff", "flags", "ehsize",
              "phentsize", "phnum", "shentsize", "shnum", "shstrndx")
    header = dict(zip(fields, struct.unpack_from(endian + "HHIQQQIHHHHHH", binary, 16)))
    if header["type"] != _ET_REL:
        raise ValueError(f"ELF type {header['type']} is not a relocatable object")
    machine = _host_machine()
    if machine is not None and header["machine"] != machine:
        raise ValueError(f"ELF machine {header['machine']} is not this machine's ({machine})")
    if header["ehsize"] != 64 or header["phnum"] != 0:
        raise ValueError("unexpected ELF header size or program headers in an object file")
    if header["shentsize"] != 64 or not 0 < header["shnum"] < _SHN_LORESERVE:
        raise ValueError(f"bad section header table ({header['shnum']} entries of {header['shentsize']} bytes)")
    if header["shoff"] % 8 or header["shoff"] + 64 * header["shnum"] > len(binary):
        raise ValueError(f"section header table at {header['shoff']} is misaligned or past the end of the file")
    if not 0 < header["shstrndx"] < header["shnum"]:
        raise ValueError(f"section name table index {header['shstrndx']} out of range")
    return header


@functools.lru_cache(maxsize=None)
def _host_machine() -> Optional[int]:
    """This machine's ELF e_machine, or None where it is not in the table (then not checked)."""
    return _MACHINES.get(platform.machine().lower())


def _read_sections(binary: bytes, endian: str, header: dict) -> list[_Section]:
    """The section headers, each checked to lie inside the file with a sane alignment."""
    sections = []
    for index in range(header["shnum"]):
        fields = struct.unpack_from(endian + "IIQQQQIIQQ", binary, header["shoff"] + 64 * index)
        name, type_, flags, _addr, offset, size, link, info, align, entsize = fields
        section = _Section(index, name, type_, flags, offset, size, link, info, align, entsize)
        if index == 0 and (type_ != _SHT_NULL or any(fields)):
            raise ValueError("section 0 is not the null section")
        if type_ != _SHT_NOBITS and offset + size > len(binary):
            raise ValueError(f"section {index} ({offset} + {size} bytes) is past the end of the file ({len(binary)})")
        if type_ == _SHT_NOBITS and size > _MAX_NOBITS:
            raise ValueError(f"section {index} asks for {size} zero bytes")
        if align > _MAX_ALIGNMENT or align & (align - 1):
            raise ValueError(f"section {index} has alignment {align}")
        if flags & ~_SHF_ALLOWED:
            raise ValueError(f"section {index} has flags {flags:#x} (thread-local, compressed or unknown)")
        sections.append(section)
    return sections


def _check_section_names(binary: bytes, sections: list[_Section], shstrndx: int) -> None:
    """The section name table is a NUL-terminated string table holding every section's name."""
    names = sections[shstrndx]
    _check_string_table(binary, names, "section name table")
    for section in sections:
        if section.name >= names.size:
            raise ValueError(f"section {section.index}'s name is outside the section name table")


def _check_string_table(binary: bytes, section: _Section, what: str) -> None:
    if section.type != _SHT_STRTAB or section.size == 0 or binary[section.offset + section.size - 1] != 0:
        raise ValueError(f"the {what} (section {section.index}) is not a NUL-terminated string table")


def _symbol_table(sections: list[_Section]) -> _Section:
    """The one symbol table (LLVM refuses two; a kernel object without one defines nothing)."""
    tables = [s for s in sections if s.type == _SHT_SYMTAB]
    if len(tables) != 1:
        raise ValueError(f"{len(tables)} symbol tables (expected one)")
    symtab = tables[0]
    if symtab.entsize != 24 or symtab.size % 24 or symtab.size == 0:
        raise ValueError("the symbol table's size is not a whole number of 24-byte symbols")
    if not 0 < symtab.link < len(sections):
        raise ValueError("the symbol table names no string table")
    if symtab.info > symtab.size // 24:
        raise ValueError("the symbol table's count of local symbols is past its end")
    return symtab


def _read_symbols(binary: bytes, endian: str, sections: list[_Section], symtab: _Section) -> list[_Symbol]:
    """Every symbol, each checked: its name inside the string table, its section one that
    exists, and a defined symbol's range inside its section."""
    strtab = sections[symtab.link]
    _check_string_table(binary, strtab, "symbol name table")
    strings = binary[strtab.offset:strtab.offset + strtab.size]
    symbols = []
    for offset in range(symtab.offset, symtab.offset + symtab.size, 24):
        name, info, _other, shndx, value, size = struct.unpack_from(endian + "IBBHQQ", binary, offset)
        index = len(symbols)
        if name >= len(strings):
            raise ValueError(f"symbol {index}'s name is outside the string table")
        if info & 0xF in (_STT_TLS, _STT_GNU_IFUNC):
            raise ValueError(f"symbol {index} is thread-local or an indirect function")
        if _SHN_LORESERVE <= shndx and shndx not in (_SHN_ABS, _SHN_COMMON):
            raise ValueError(f"symbol {index} has the special section index {shndx:#x}")
        if _SHN_UNDEF < shndx < _SHN_LORESERVE:
            if shndx >= len(sections):
                raise ValueError(f"symbol {index} is in section {shndx}, which does not exist")
            if value + size > sections[shndx].size:
                raise ValueError(f"symbol {index} ({value} + {size} bytes) is past the end of its section")
        symbols.append(_Symbol(strings[name:strings.index(b"\0", name)], info, shndx, value, size))
    return symbols


def _check_relocations(binary: bytes, endian: str, machine: int, sections: list[_Section],
                       symtab: _Section, symbol_count: int) -> None:
    """Every relocation section applies to a section that exists, through the symbol table, and
    each relocation is of a type the JIT's linker knows, names a symbol that exists and patches
    bytes inside its section."""
    for section in sections:
        if section.type not in (_SHT_RELA, _SHT_REL):
            continue
        entry = 24 if section.type == _SHT_RELA else 16
        if section.entsize != entry or section.size % entry:
            raise ValueError(f"relocation section {section.index} is not a whole number of {entry}-byte entries")
        if section.link != symtab.index or not 0 < section.info < len(sections):
            raise ValueError(f"relocation section {section.index} links to the wrong symbol table or section")
        target = sections[section.info]
        for offset in range(section.offset, section.offset + section.size, entry):
            r_offset, r_info = struct.unpack_from(endian + "QQ", binary, offset)
            symbol, kind = r_info >> 32, r_info & 0xFFFFFFFF
            width = _relocation_width(machine, kind)
            if symbol >= symbol_count:
                raise ValueError(f"a relocation in section {section.index} names symbol {symbol}, which does not exist")
            if r_offset + width > target.size:
                raise ValueError(f"a relocation at {r_offset} is past the end of section {target.index}")


def _relocation_width(machine: int, kind: int) -> int:
    """The bytes a relocation of this type writes (1 where the machine's types are not known
    here: its offset is still checked)."""
    if machine != _MACHINES["x86_64"]:
        return 1
    if kind not in _X86_64_RELOCATIONS:
        raise ValueError(f"relocation type {kind} is not one the JIT's linker implements")
    return _X86_64_RELOCATIONS[kind]


def _check_defines(symbols: list[_Symbol], sections: list[_Section], name: str) -> None:
    """The object defines `name` as a global function in an executable section."""
    wanted = name.encode()
    for symbol in symbols:
        if symbol.name != wanted or not _SHN_UNDEF < symbol.shndx < _SHN_LORESERVE:
            continue
        if symbol.info & 0xF != _STT_FUNC or symbol.info >> 4 not in (_STB_GLOBAL, _STB_WEAK):
            raise ValueError(f"{name} is not a global function in the object")
        if not sections[symbol.shndx].flags & _SHF_EXECINSTR:
            raise ValueError(f"{name} is not in an executable section")
        return
    raise ValueError(f"the object does not define the kernel {name}")

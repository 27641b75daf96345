"""The dynamic-linking facts of an ELF file: what it is called and what it needs.

The image is trimmed (no terminal or database libraries), so the build checks
that every shared object it ships finds every library it links against inside
the image. Only the dynamic section is read: enough to answer that, and no
external tool (readelf, ldd) is needed on the build host.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from pathlib import Path

MAGIC = b"\x7fELF"
PT_LOAD, PT_DYNAMIC = 1, 2
DT_NULL, DT_NEEDED, DT_STRTAB, DT_SONAME = 0, 1, 5, 14


@dataclass(frozen=True)
class Linking:
    soname: str | None
    needed: tuple[str, ...]


def is_elf(path: Path) -> bool:
    with path.open("rb") as f:
        return f.read(4) == MAGIC


def linking(path: Path) -> Linking | None:
    """DT_SONAME and DT_NEEDED of a 64-bit little-endian ELF; None when it links nothing."""
    data = path.read_bytes()
    if data[:4] != MAGIC:
        raise ValueError(f"{path} is not an ELF file")
    if data[4] != 2 or data[5] != 1:
        raise ValueError(f"{path}: only 64-bit little-endian ELF is supported")
    phoff, phentsize, phnum = (
        struct.unpack_from("<Q", data, 0x20)[0],
        *struct.unpack_from("<HH", data, 0x36),
    )
    loads: list[tuple[int, int, int]] = []  # (vaddr, offset, filesz)
    dynamic: tuple[int, int] | None = None
    for i in range(phnum):
        p_type, _, p_offset, p_vaddr, _, p_filesz = struct.unpack_from(
            "<IIQQQQ", data, phoff + i * phentsize
        )
        if p_type == PT_LOAD:
            loads.append((p_vaddr, p_offset, p_filesz))
        elif p_type == PT_DYNAMIC:
            dynamic = (p_offset, p_filesz)
    if dynamic is None:
        return None  # statically linked

    def file_offset(vaddr: int) -> int:
        for start, offset, size in loads:
            if start <= vaddr < start + size:
                return offset + vaddr - start
        raise ValueError(f"{path}: address {vaddr:#x} is in no loaded segment")

    entries: list[tuple[int, int]] = []
    offset, size = dynamic
    for pos in range(offset, offset + size, 16):
        tag, value = struct.unpack_from("<qQ", data, pos)
        if tag == DT_NULL:
            break
        entries.append((tag, value))
    strtab = file_offset(next(v for t, v in entries if t == DT_STRTAB))

    def string(at: int) -> str:
        end = data.index(b"\0", strtab + at)
        return data[strtab + at : end].decode()

    soname = next((string(v) for t, v in entries if t == DT_SONAME), None)
    return Linking(soname, tuple(string(v) for t, v in entries if t == DT_NEEDED))

"""The CUDA device code inside a shared object: its fatbins, each one's SASS (ELF cubins) and PTX
entries by architecture, and the PTX text.

NVIDIA's cuobjdump lists this, but the one a registry here serves (nvidia-cuda-cuobjdump, 13.x)
refuses any file holding sm_30 code ("Support for 'sm_30' has been removed. Please use CUDA toolkit
10.2 or earlier"), which is every 2017-2018 framework wheel. So the kit reads the container itself,
by hand (no library reads it), and tests/containers/test_fatbin.py checks it against cuobjdump on
files both can read.

The layout, as these files have it (little-endian):
- a fatbin: magic 0xBA55ED50 (u32), version 1 (u16), header size 16 (u16), size of its entries (u64);
- each entry: kind (u16: 1 PTX, 2 ELF cubin), u16, header size (u32), payload size (u64), then at 16
  the compressed size (u32), at 28 the architecture (u32, e.g. 52 for sm_52 / compute_52), at 40
  flags (u64; 0x2000: the payload is an LZ4 block, as in the 2017-2019 wheels), at 56 the uncompressed
  size (u64); the payload follows the entry header. Flag 0x8000 marks a zstd frame instead (what
  CUDA 13's fatbinary writes when asked to compress); tests/containers/test_fatbin.py builds both
  kinds with fatbinary and checks the reading against cuobjdump.
The fatbins are found by their magic anywhere in the file (the .nv_fatbin and relocatable sections
alike); a candidate counts only when its entries walk to exactly its stated size.
"""

from __future__ import annotations

import re
import struct
from dataclasses import dataclass
from pathlib import Path

MAGIC = struct.pack("<I", 0xBA55ED50)
PTX, ELF = 1, 2
COMPRESSION = ((0x2000, "lz4"), (0x8000, "zstd"))  # flag bit -> how the payload is compressed


@dataclass(frozen=True)
class Entry:
    fatbin: int  # index of the fatbin in the file (one per compilation unit: a "module")
    kind: int  # PTX or ELF
    arch: int  # 52 for sm_52 / compute_52
    offset: int  # of the payload in the file
    size: int  # stored payload bytes
    compression: str | None  # None, "lz4" or "zstd"
    uncompressed_size: int

    @property
    def cc(self) -> str:
        return f"{self.arch // 10}.{self.arch % 10}"


def _entries_at(data: bytes, at: int, index: int) -> list[Entry] | None:
    """The entries of the fatbin whose header starts at `at`; None when it is not one."""
    if at + 16 > len(data):
        return None
    _, version, header, size = struct.unpack_from("<IHHQ", data, at)
    start, end = at + header, at + header + size
    if version != 1 or header != 16 or size == 0 or end > len(data):
        return None
    out, e = [], start
    while e < end:
        if e + 64 > end:
            return None
        kind, _, ehs, payload = struct.unpack_from("<HHIQ", data, e)
        if kind not in (PTX, ELF) or ehs < 64 or e + ehs + payload > end:
            return None
        csize, arch, flags, usize = (struct.unpack_from("<I", data, e + 16)[0],
                                     struct.unpack_from("<I", data, e + 28)[0],
                                     struct.unpack_from("<Q", data, e + 40)[0],
                                     struct.unpack_from("<Q", data, e + 56)[0])
        how = next((name for bit, name in COMPRESSION if flags & bit), None)
        out.append(Entry(index, kind, arch, e + ehs, csize if how and csize else payload, how,
                         usize if how else payload))
        e += ehs + payload
    return out if e == end and out else None


def entries(path: Path) -> list[Entry]:
    """Every entry of every fatbin in `path`."""
    data = path.read_bytes()
    out: list[Entry] = []
    at, index = data.find(MAGIC), 0
    while at != -1:
        found = _entries_at(data, at, index)
        if found:
            out += found
            index += 1
            _, _, header, size = struct.unpack_from("<IHHQ", data, at)
            at = data.find(MAGIC, at + header + size)
        else:
            at = data.find(MAGIC, at + 4)
    return out


def archs(found: list[Entry], kind: int) -> list[str]:
    """The compute capabilities ('5.2') of the entries of one kind, ascending."""
    return [f"{a // 10}.{a % 10}" for a in sorted({e.arch for e in found if e.kind == kind})]


def payload(path: Path, entry: Entry) -> bytes:
    """One entry's bytes (decompressed where they are compressed)."""
    with open(path, "rb") as f:
        f.seek(entry.offset)
        data = f.read(entry.size)
    if entry.compression == "lz4":
        import lz4.block

        return lz4.block.decompress(data, uncompressed_size=entry.uncompressed_size)
    if entry.compression == "zstd":
        import zstandard

        return zstandard.ZstdDecompressor().decompress(data, max_output_size=entry.uncompressed_size)
    return data


def ptx_text(path: Path, entry: Entry) -> str:
    """The PTX of one entry (decompressed where it is compressed)."""
    return payload(path, entry).rstrip(b"\0").decode("utf-8", "replace")


def has_kernels(path: Path, entries: list[Entry]) -> bool:
    """Whether any of the entries defines a kernel: a cubin's `.text.<function>` section, a PTX
    `.entry`. A module with none (an empty cubin, as libcufftw's) has nothing for a GPU to run."""
    for e in entries:
        data = payload(path, e)
        if (e.kind == ELF and b".text." in data) or (e.kind == PTX and re.search(rb"\.entry\s", data)):
            return True
    return False


def runs_on(found: list[Entry], cc: int) -> tuple[set[int], list[Entry], set[int]]:
    """How a GPU of compute capability `cc` (90 for 9.0) runs each module (fatbin) of a file, as the
    driver chooses: (the modules with SASS it runs, cubins of its major version and a minor at most its
    own; the PTX it JIT-compiles for each other module, that module's highest PTX at or below `cc`; the
    modules with code for other architectures only, which it cannot run: a library that picks its
    kernels by architecture never loads them there). Architecture-specific cubins (sm_90a) are read
    as their base."""
    native: set[int] = set()
    ptx: dict[int, Entry] = {}
    modules = {e.fatbin for e in found}
    for e in found:
        if e.kind == ELF and e.arch // 10 == cc // 10 and e.arch <= cc:
            native.add(e.fatbin)
        elif e.kind == PTX and e.arch <= cc and (e.fatbin not in ptx or e.arch > ptx[e.fatbin].arch):
            ptx[e.fatbin] = e
    jit = [ptx[k] for k in sorted(ptx) if k not in native]
    return native, jit, modules - native - set(ptx)


def highest_ptx(found: list[Entry]) -> list[Entry]:
    """Each fatbin's PTX entry of the highest architecture (what a newer GPU's driver JIT-compiles)."""
    best: dict[int, Entry] = {}
    for e in found:
        if e.kind == PTX and (e.fatbin not in best or e.arch > best[e.fatbin].arch):
            best[e.fatbin] = e
    return [best[k] for k in sorted(best)]

"""Which CUDA driver a GPU cell really loaded, and whether the host's driver library can load against
the image's C library.

    record(maps_path, environ)  the stack fingerprint's `driver_load` of a GPU cell
    glibc_needs(path)           the GLIBC_x.y versions an ELF shared library requires of the C library
                                (its .gnu.version_r section), oldest first
    glibc_version()             this process's C library version (gnu_get_libc_version), None if the
                                process does not run on glibc

Why: the same image can load a different libcuda on different hosts. The NVIDIA container toolkit
mounts the host driver's libraries into the container, and decides by driver and device whether an
image's CUDA forward-compatibility libraries (cuda-compat, under .../compat/) are used instead; the
injected host library may need a newer glibc than an old image has (it then fails to load, and the
framework says only that CUDA is unavailable). The record says which file was mapped, its version (from
its file name, libcuda.so.<driver version>), whether it came from a compat directory, the C library's
version against the newest GLIBC_ version the driver library requires, the kernel module's version
line, and the toolkit's NVIDIA_* variables where the container has them (the toolkit's own version
and mode are not visible inside the container; the host side records what the runner sees).

Never run on a GPU (no NVIDIA driver has been available to a run with this module); tested with
stand-in libraries on the CPU (tests/stacks/test_driver_load.py).

Python 3.5 syntax (2.7-compatible), standard library only; never imports the host package.
"""
from __future__ import print_function

import ctypes
import os
import re
import struct

SHT_GNU_VERNEED = 0x6FFFFFFE
# the toolkit's variables a container may carry: what it was asked to inject and to require
NVIDIA_ENV = ("NVIDIA_VISIBLE_DEVICES", "NVIDIA_DRIVER_CAPABILITIES", "NVIDIA_REQUIRE_CUDA",
              "NVIDIA_DISABLE_REQUIRE", "NVIDIA_CTK_LIBCUDA_DIR")
KERNEL_MODULE_VERSION = "/proc/driver/nvidia/version"
CONTAINER_MARKERS = ("/.dockerenv", "/run/.containerenv", "/.singularity.d")
# symbol versions without a release number, by the glibc release that introduced them: DT_RELR
# relocations, glibc 2.36 (its NEWS; libraries linked with -z pack-relative-relocs need it)
NAMED_VERSIONS = {"ABI_DT_RELR": "2.36"}


def _err(e):
    return ("%s: %s" % (type(e).__name__, e)).strip()[:300]


def version_tuple(text):
    """'2.27' -> (2, 27); None when it is not dotted digits."""
    if not text or not re.match(r"^\d+(\.\d+)*$", text):
        return None
    return tuple(int(x) for x in text.split("."))


def glibc_needs(path):
    """The GLIBC_x.y versions `path` (an ELF shared object) requires, oldest first; [] when it requires
    none. Raises ValueError for a file that is not ELF, IOError/OSError when it cannot be read."""
    with open(path, "rb") as f:
        ident = f.read(16)
        if ident[:4] != b"\x7fELF":
            raise ValueError("%s is not an ELF file" % path)
        bits, order = {1: 32, 2: 64}.get(bytearray(ident)[4]), {1: "<", 2: ">"}.get(bytearray(ident)[5])
        if bits is None or order is None:
            raise ValueError("%s: unknown ELF class or byte order" % path)
        if bits == 64:
            f.seek(0x28)
            shoff, = struct.unpack(order + "Q", f.read(8))
            f.seek(0x3A)
            shentsize, shnum, _ = struct.unpack(order + "HHH", f.read(6))
            sh_fmt = order + "IIQQQQIIQQ"  # name type flags addr offset size link info align entsize
        else:
            f.seek(0x20)
            shoff, = struct.unpack(order + "I", f.read(4))
            f.seek(0x2E)
            shentsize, shnum, _ = struct.unpack(order + "HHH", f.read(6))
            sh_fmt = order + "IIIIIIIIII"
        sections = []
        for i in range(shnum):
            f.seek(shoff + i * shentsize)
            sections.append(struct.unpack(sh_fmt, f.read(struct.calcsize(sh_fmt))))
        found = set()
        for sec in sections:
            if sec[1] != SHT_GNU_VERNEED:
                continue
            offset, size, link, count = sec[4], sec[5], sec[6], sec[7]
            strtab = sections[link]
            f.seek(strtab[4])
            strings = f.read(strtab[5])
            f.seek(offset)
            data = f.read(size)
            at = 0
            for _ in range(count):  # Elf_Verneed: version, cnt, file, aux, next
                _, cnt, _, aux, nxt = struct.unpack_from(order + "HHIII", data, at)
                a = at + aux
                for _ in range(cnt):  # Elf_Vernaux: hash, flags, other, name, next
                    _, _, _, name, anext = struct.unpack_from(order + "IHHII", data, a)
                    text = strings[name:strings.index(b"\0", name)].decode("ascii", "replace")
                    if text.startswith("GLIBC_"):
                        version = NAMED_VERSIONS.get(text[6:], text[6:])
                        if version_tuple(version):
                            found.add(version)
                    if not anext:
                        break
                    a += anext
                if not nxt:
                    break
                at += nxt
    return sorted(found, key=version_tuple)


def glibc_version():
    try:
        libc = ctypes.CDLL(None)
        fn = libc.gnu_get_libc_version
        fn.restype = ctypes.c_char_p
        return fn().decode("ascii")
    except (AttributeError, OSError):
        return None


def driver_version_of(path):
    """The driver version in a libcuda file name (libcuda.so.550.54.15 -> '550.54.15'); None."""
    m = re.match(r"^libcuda\.so\.(\d+\.\d+(\.\d+)?)$", os.path.basename(path))
    return m.group(1) if m else None


def _kernel_module(path=KERNEL_MODULE_VERSION):
    try:
        with open(path) as f:
            return f.readline().strip()[:300] or None
    except (IOError, OSError):
        return None


def record(maps_path="/proc/self/maps", environ=None, load=True, markers=CONTAINER_MARKERS,
           kernel_module_path=KERNEL_MODULE_VERSION):
    """The driver a GPU cell loaded: called after the workload, when the framework has mapped it.
    With `load` and no libcuda mapped, the driver's libcuda.so.1 is loaded here (the load test: the
    loader's error names a missing GLIBC_ version, if that is why)."""
    import gpu_runtime  # here: the host loads this module alone for glibc_needs (files.bench_module)

    environ = os.environ if environ is None else environ
    mapped = [p for p in gpu_runtime._mapped("", maps_path) if p.startswith("/")]
    libcuda = [p for p in mapped if os.path.basename(p).startswith("libcuda.so")]
    out = {"libcuda": None, "realpath": None, "driver_version": None, "loaded_by": None, "compat": False,
           "compat_libraries": sorted(p for p in mapped if "/compat/" in p), "load_error": None,
           "glibc": glibc_version(), "glibc_needed": None, "glibc_ok": None,
           "kernel_module": _kernel_module(kernel_module_path),
           "container": [m for m in markers if os.path.exists(m)],
           "nvidia_env": dict((k, environ[k][:500]) for k in NVIDIA_ENV if k in environ)}
    if libcuda:
        path, out["loaded_by"] = libcuda[0], "the workload"
    elif load:
        path, why = gpu_runtime.find_driver_libcuda()
        out["loaded_by"] = "the load test" if path else None
        out["load_error"] = why
    else:
        path = None
    if path is None:
        return out
    real = os.path.realpath(path)
    out.update(libcuda=path, realpath=real, compat="/compat/" in real or "/compat/" in path,
               driver_version=driver_version_of(real) or driver_version_of(path))
    try:
        needs = glibc_needs(real)
    except (IOError, OSError, ValueError, struct.error) as e:
        out["load_error"] = out["load_error"] or "glibc needs not read: %s" % _err(e)
        return out
    out["glibc_needed"] = needs[-1] if needs else None
    have = version_tuple(out["glibc"])
    if needs and have:
        out["glibc_ok"] = have >= version_tuple(needs[-1])
    return out

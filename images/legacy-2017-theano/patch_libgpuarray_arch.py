"""Cap the architecture libgpuarray asks NVRTC 8.0 for at compute_61 (GPU flavour only).

libgpuarray 0.6.8 detect_arch() formats "compute_<major><minor>" from the device's compute
capability, and NVRTC 8.0 rejects compute_70 and newer, so every kernel fails to compile on
Volta and later (legacy_stacks.md section 0 item 7). After this patch the capability is capped
at 6.1; NVRTC emits compute_61 PTX, which the driver JIT-compiles for the real GPU.

The replaced line was read in src/gpuarray_buffer_cuda.c of Theano/libgpuarray (code search,
commit 003a7407); that it is identical at tag v0.6.8 is unverified, so the script fails loudly
when the line is not found. Never run against a GPU.

usage: python3 patch_libgpuarray_arch.py SOURCE_DIR        (Python 3.5 syntax)
"""
import os
import sys

MARKER = "REPROKIT_ARCH_CAP"
LINE = 'res = snprintf(ret, sz, "%s%d%d", prefix, major, minor);'
CAP = ("if (major > 6 || (major == 6 && minor > 1)) { major = 6; minor = 1; }  "
       "/* " + MARKER + ": NVRTC 8 knows no compute_70+ */")


def main(source_dir):
    path = os.path.join(source_dir, "src", "gpuarray_buffer_cuda.c")
    with open(path, encoding="utf-8") as fh:
        text = fh.read()
    if MARKER in text:
        print("already patched: " + path)
        return 0
    lines = text.split("\n")
    hits = [i for i, line in enumerate(lines) if line.strip() == LINE]
    if len(hits) != 1:
        sys.stderr.write("expected one detect_arch snprintf line in %s, found %d\n" % (path, len(hits)))
        return 1
    i = hits[0]
    indent = lines[i][: len(lines[i]) - len(lines[i].lstrip())]
    lines.insert(i, indent + CAP)
    with open(path, "w", encoding="utf-8") as fh:
        fh.write("\n".join(lines))
    print("patched detect_arch in " + path)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))

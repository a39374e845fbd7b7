"""Does each flavour's wheelhouse resolve for its TARGET interpreter? Metadata only, against PyPI.

    python -m reprokit.containers.wheelhouse --check [--image DIR ...] [--flavour gpu|cpu|all] [--json FILE]
    reproduce.py build --check-wheelhouse --image DIR ... [--flavour gpu]   (the same, via the build)

A GPU flavour's requirements are resolved for the interpreter of its image (recipe.yaml's
`pip download --python-version/--implementation/--abi/--platform` flags, Python's full version from
images/_blocks/distros.yaml), never for the host that runs the check:

- each pin is looked up in PyPI's simple JSON API (PEP 691: every file of every release with its
  sha256 and Requires-Python); the file pip would pick for the target (its compatibility tags in
  pip's order, only files whose sha256 is pinned, wheels before the sdist) must exist, admit the
  target Python, and carry a pinned sha256;
- its dependencies are read from the file's own metadata without downloading it: a wheel's
  METADATA through HTTP range requests on the zip's central directory (what pip's fast-deps does),
  an sdist's PKG-INFO / egg-info requires.txt from the (small) sdist, else the `# sdist; requires:`
  list written beside its pin; then evaluated with the TARGET's environment markers
  (python_version 3.5 keeps `importlib-metadata; python_version < "3.8"`, which a resolution on the
  host's 3.11 drops) and every one must be pinned with a version that satisfies it;
- files the recipe fetches from elsewhere (`extra_files`, e.g. torch wheels of download.pytorch.org)
  must name a wheel the target can install and list their dependencies (checked like the pins).

Problems are listed one per line; exit status 1 when there is any, 2 when the index cannot be read
(the index must be reachable: an unreachable index is a failure, not a pass). Nothing is installed.
"""

from __future__ import annotations

import argparse
import email.parser
import http.client
import io
import json
import os
import re
import socket
import ssl
import sys
import tarfile
import threading
import time
import urllib.parse
import urllib.request
import zipfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from packaging import tags as ptags
from packaging.markers import Marker
from packaging.requirements import InvalidRequirement, Requirement
from packaging.specifiers import SpecifierSet
from packaging.utils import (
    InvalidSdistFilename,
    InvalidWheelFilename,
    canonicalize_name,
    parse_sdist_filename,
    parse_wheel_filename,
)
from packaging.version import InvalidVersion, Version

from reprokit.containers import images, recipes
from reprokit.errors import UserError

INDEX = os.environ.get("REPROKIT_PYPI_SIMPLE") or "https://pypi.org/simple"
SDIST_LIMIT = 20 << 20  # sdists are downloaded whole to read their metadata; none here is > 4 MB
TIMEOUT = 60
RETRIES = 3
WORKERS = 8


class IndexError_(Exception):
    """The package index could not be read (network, HTTP error, bad answer)."""


class NotFound(Exception):
    """HTTP 404."""


_ADDRESSES: dict[tuple[str, int], tuple] = {}
_RESOLVE = threading.Lock()


def _address(host: str, port: int) -> tuple:
    """One DNS lookup per host for the whole check: concurrent lookups of this machine's resolver
    sometimes stall for 5 s (measured), and every new connection would pay one."""
    with _RESOLVE:
        if (host, port) not in _ADDRESSES:
            _ADDRESSES[(host, port)] = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0][4][:2]
        return _ADDRESSES[(host, port)]


class _HTTP(http.client.HTTPConnection):
    def connect(self):
        self.sock = socket.create_connection(_address(self.host, self.port), self.timeout)


class _HTTPS(http.client.HTTPSConnection):
    def connect(self):
        sock = socket.create_connection(_address(self.host, self.port), self.timeout)
        self.sock = self._context.wrap_socket(sock, server_hostname=self.host)


# -- the target interpreter ----------------------------------------------------------------------
@dataclass
class Target:
    python: tuple[int, int]
    full: str                      # python_full_version of the image's interpreter
    implementation: str            # "cp"
    abis: list[str]
    platforms: list[str]           # pip --platform values, in the command's order

    @property
    def label(self) -> str:
        plats = self.platforms if len(self.platforms) <= 3 else \
            [self.platforms[0], "...", self.platforms[-1]]
        return f"CPython {self.full} ({'/'.join(self.abis)}, {', '.join(plats)})"

    def expanded_platforms(self) -> list[str]:
        """pip's expansion of legacy manylinux platforms (manylinux2014 also accepts 2010 and 1)."""
        out: list[str] = []
        for p in self.platforms:
            out.append(p)
            m = re.fullmatch(r"manylinux(2014|2010)_(\w+)", p)
            if m:
                later = {"2014": ["2010", "1"], "2010": ["1"]}[m.group(1)]
                out += [f"manylinux{x}_{m.group(2)}" for x in later]
        return list(dict.fromkeys(out))

    def tags(self, platforms: list[str] | None = None) -> list[ptags.Tag]:
        """The target's supported tags in pip's preference order (best first)."""
        plats = platforms or self.expanded_platforms()
        interp = f"{self.implementation}{self.python[0]}{self.python[1]}"
        out = list(ptags.cpython_tags(self.python, abis=self.abis, platforms=plats))
        out += list(ptags.compatible_tags(self.python, interp, plats))
        return list(dict.fromkeys(out))

    def environment(self) -> dict[str, str]:
        """PEP 508 marker environment of the target (Linux x86_64 CPython)."""
        return {"implementation_name": "cpython", "implementation_version": self.full,
                "os_name": "posix", "platform_machine": "x86_64", "platform_release": "",
                "platform_system": "Linux", "platform_version": "",
                "python_full_version": self.full, "platform_python_implementation": "CPython",
                "python_version": f"{self.python[0]}.{self.python[1]}", "sys_platform": "linux"}


def manylinux_platforms(glibc: int) -> list[str]:
    """The platforms pip is given for a glibc 2.<glibc> x86_64 image (reprokit/containers/build.py)."""
    return ([f"manylinux_2_{minor}_x86_64" for minor in range(glibc, 16, -1)]
            + ["manylinux2014_x86_64", "manylinux2010_x86_64", "manylinux1_x86_64"])


def _flag_values(cmd: list[str], flag: str) -> list[str]:
    return [cmd[i + 1] for i, t in enumerate(cmd[:-1]) if t == flag]


def target_for(params: dict, flavour: str, distros: dict) -> Target:
    """The interpreter a flavour's wheelhouse is for: the wheelhouse command's flags, else the
    base distribution's Python on manylinux (as `reproduce.py build` downloads for it)."""
    spec = params["flavours"][flavour]
    base = spec["build_args"]["BASE_IMAGE"]
    distro = distros.get(base) or {}
    cmd = list((spec.get("wheelhouse") or {}).get("command") or [])
    py = (_flag_values(cmd, "--python-version") or [str(distro.get("python") or "3.11")])[0]
    major, minor = (int(x) for x in py.split(".")[:2])
    full = str(distro.get("python_full") or f"{major}.{minor}.0")
    if not full.startswith(f"{major}.{minor}."):
        full = f"{major}.{minor}.0"
    impl = (_flag_values(cmd, "--implementation") or ["cp"])[0]
    abis = _flag_values(cmd, "--abi") or [f"cp{major}{minor}" + ("m" if (major, minor) < (3, 8) else "")]
    platforms = _flag_values(cmd, "--platform") or manylinux_platforms(images.python_for_base(base)[1])
    return Target((major, minor), full, impl, abis, platforms)


# -- requirement files ---------------------------------------------------------------------------
@dataclass
class Pin:
    name: str                # as written
    version: str
    hashes: list[str]
    line: int
    sdist: bool = False      # "# sdist" beside the pin
    requires: list[str] | None = None  # "# sdist; requires: a, b>=1" (None: not given)

    @property
    def key(self) -> str:
        return canonicalize_name(self.name)


_HASH = re.compile(r"--hash[= ]sha256:([0-9a-fA-F]{64})")


def parse_requirements(text: str, where: str = "requirements") -> list[Pin]:
    """name==version [--hash=sha256:X ...] [# sdist[; requires: a, b | none]] per line."""
    pins = []
    for n, raw in enumerate(text.splitlines(), 1):
        code, _, comment = raw.partition("#")
        if not code.strip():
            continue
        hashes = [h.lower() for h in _HASH.findall(code)]
        spec = _HASH.sub("", code).strip()
        try:
            req = Requirement(spec)
        except InvalidRequirement as e:
            raise UserError(f"{where}:{n}: not a requirement ({e})") from None
        exact = [s for s in req.specifier if s.operator == "=="]
        if len(exact) != 1 or len(req.specifier) != 1:
            raise UserError(f"{where}:{n}: {spec} is not pinned with ==")
        note = comment.strip()
        sdist = bool(re.match(r"sdist\b", note))
        requires = None
        m = re.search(r"requires:\s*(.*)$", note)
        if m:
            body = re.sub(r"\[[SVU][^\]]*\]", "", m.group(1)).strip()
            requires = [] if body in ("", "none") else [r.strip() for r in body.split(",") if r.strip()]
        pins.append(Pin(req.name, exact[0].version, hashes, n, sdist, requires))
    return pins


# -- the index -----------------------------------------------------------------------------------
def _context() -> ssl.SSLContext:
    cafile = next((p for p in (os.environ.get("PIP_CERT"), os.environ.get("SSL_CERT_FILE"),
                               "/etc/ssl/certs/ca-certificates.crt") if p and os.path.isfile(p)), None)
    return ssl.create_default_context(cafile=cafile)


class Index:
    """PyPI's simple JSON API, cached per project; byte ranges of files for their metadata."""

    def __init__(self, url: str | None = None):
        self.url = (url or INDEX).rstrip("/")
        self._projects: dict[str, list[dict]] = {}
        self._ctx = _context()
        self._local = threading.local()
        self._lock = threading.Lock()
        self.requests = 0
        self.bytes = 0

    def _connection(self, scheme: str, host: str, port: int) -> http.client.HTTPConnection:
        pool = self._local.__dict__.setdefault("pool", {})
        key = (scheme, host, port)
        if key not in pool:
            cls = _HTTPS if scheme == "https" else _HTTP
            pool[key] = cls(host, port, timeout=TIMEOUT, **({"context": self._ctx} if scheme == "https"
                                                              else {}))
        return pool[key]

    def _drop(self, scheme: str, host: str, port: int) -> None:
        conn = self._local.__dict__.get("pool", {}).pop((scheme, host, port), None)
        if conn is not None:
            conn.close()

    def _open(self, url: str, headers: dict | None = None) -> tuple[int, dict, bytes]:
        """GET url over a kept-alive connection of this thread: (status, headers, body)."""
        last: Exception | None = None
        for attempt in range(RETRIES):
            parts = urllib.parse.urlsplit(url)
            port = parts.port or (443 if parts.scheme == "https" else 80)
            path = parts.path + (f"?{parts.query}" if parts.query else "")
            try:
                conn = self._connection(parts.scheme, parts.hostname, port)
                conn.request("GET", path, headers={"User-Agent": "reprokit-wheelhouse-check",
                                                   **(headers or {})})
                resp = conn.getresponse()
                body = resp.read()
            except (http.client.HTTPException, OSError) as e:
                self._drop(parts.scheme, parts.hostname, port)
                last = e
                time.sleep(attempt)
                continue
            with self._lock:
                self.requests += 1
                self.bytes += len(body)
            if resp.status in (301, 302, 303, 307, 308) and resp.getheader("Location"):
                url = urllib.parse.urljoin(url, resp.getheader("Location"))
                continue
            if resp.status == 404:
                raise NotFound(url)
            if resp.status >= 400:
                last = IndexError_(f"HTTP {resp.status}")
                time.sleep(attempt + 1)
                continue
            return resp.status, dict(resp.getheaders()), body
        raise IndexError_(f"{url}: {last}")

    def files(self, name: str) -> list[dict]:
        """Every file of the project: filename, url, sha256, requires_python, yanked, size."""
        key = canonicalize_name(name)
        if key not in self._projects:
            url = f"{self.url}/{key}/"
            try:
                _, _, body = self._open(url, {"Accept": "application/vnd.pypi.simple.v1+json"})
            except NotFound:
                self._projects[key] = []
                return []
            try:
                doc = json.loads(body)
            except ValueError as e:
                raise IndexError_(f"{url}: not PEP 691 JSON ({e})") from None
            self._projects[key] = [
                {"filename": f["filename"], "url": f["url"],
                 "sha256": (f.get("hashes") or {}).get("sha256"),
                 "requires_python": f.get("requires-python"),
                 "yanked": bool(f.get("yanked")), "size": f.get("size")}
                for f in doc.get("files", [])]
        return self._projects[key]

    def range(self, url: str, start: int, end: int) -> bytes:
        """Bytes [start, end) of url (HTTP range request)."""
        try:
            status, _, body = self._open(url, {"Range": f"bytes={start}-{end - 1}"})
        except NotFound:
            raise IndexError_(f"{url}: HTTP 404") from None
        if status == 206:
            return body
        if status == 200:  # no range support: the whole file came back
            return body[start:end]
        raise IndexError_(f"{url}: HTTP {status} for a range request")

    def whole(self, url: str, limit: int = SDIST_LIMIT) -> bytes:
        try:
            _, _, body = self._open(url)
        except NotFound:
            raise IndexError_(f"{url}: HTTP 404") from None
        if len(body) > limit:
            raise IndexError_(f"{url}: {len(body)} bytes, more than the {limit}-byte limit")
        return body


class RangeFile(io.RawIOBase):
    """A read-only, seekable view of a remote file that fetches only the byte ranges read."""

    BLOCK = 1 << 16

    def __init__(self, index: Index, url: str, size: int):
        self.index, self.url, self.size, self.pos = index, url, size, 0
        self.blocks: dict[int, bytes] = {}

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self.pos

    def seek(self, offset: int, whence: int = 0) -> int:
        self.pos = {0: offset, 1: self.pos + offset, 2: self.size + offset}[whence]
        return self.pos

    def read(self, n: int = -1) -> bytes:
        end = self.size if n is None or n < 0 else min(self.size, self.pos + n)
        if self.pos >= end:
            return b""
        first, last = self.pos // self.BLOCK, (end - 1) // self.BLOCK
        missing = [b for b in range(first, last + 1) if b not in self.blocks]
        if missing:  # one request for the whole missing span
            lo, hi = missing[0] * self.BLOCK, min(self.size, (missing[-1] + 1) * self.BLOCK)
            data = self.index.range(self.url, lo, hi)
            for b in range(missing[0], missing[-1] + 1):
                self.blocks[b] = data[(b - missing[0]) * self.BLOCK:(b - missing[0] + 1) * self.BLOCK]
        out = b"".join(self.blocks[b] for b in range(first, last + 1))
        out = out[self.pos - first * self.BLOCK:end - first * self.BLOCK]
        self.pos = end
        return out

    def readinto(self, b) -> int:
        data = self.read(len(b))
        b[:len(data)] = data
        return len(data)


def _size(index: Index, f: dict) -> int:
    if f.get("size"):
        return int(f["size"])
    _, headers, _ = index._open(f["url"], {"Range": "bytes=0-0"})
    m = re.search(r"/(\d+)$", {k.lower(): v for k, v in headers.items()}.get("content-range", ""))
    if not m:
        raise IndexError_(f"{f['url']}: no size")
    return int(m.group(1))


def wheel_metadata(index: Index, f: dict) -> email.message.Message:
    """The METADATA of a remote wheel, read through range requests."""
    with zipfile.ZipFile(RangeFile(index, f["url"], _size(index, f))) as z:
        names = [n for n in z.namelist() if re.fullmatch(r"[^/]+\.dist-info/METADATA", n)]
        if len(names) != 1:
            raise IndexError_(f"{f['filename']}: {len(names)} .dist-info/METADATA files")
        return email.parser.BytesParser().parsebytes(z.read(names[0]))


def _requires_txt(text: str) -> list[str]:
    """setuptools' egg-info requires.txt -> PEP 508 strings ([extra] / [:marker] sections)."""
    out, section = [], ""
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("[") and line.endswith("]"):
            section = line[1:-1]
            continue
        extra, _, marker = section.partition(":")
        parts = ([f'extra == "{extra}"'] if extra else []) + ([f"({marker})"] if marker else [])
        out.append(line + ("; " + " and ".join(parts) if parts else ""))
    return out


def sdist_metadata(index: Index, f: dict) -> tuple[list[str] | None, str | None, str]:
    """(Requires-Dist or None when the sdist declares none statically, Requires-Python, sha256 of
    the bytes) of a remote sdist, downloaded whole (small)."""
    import hashlib

    data = index.whole(f["url"])
    digest = hashlib.sha256(data).hexdigest()
    texts: dict[str, str] = {}
    if f["filename"].endswith(".zip"):
        with zipfile.ZipFile(io.BytesIO(data)) as z:
            for n in z.namelist():
                if n.count("/") <= 2 and n.endswith(("PKG-INFO", "requires.txt")):
                    texts[n] = z.read(n).decode("utf-8", "replace")
    else:
        with tarfile.open(fileobj=io.BytesIO(data)) as t:
            for m in t.getmembers():
                if m.isfile() and m.name.count("/") <= 2 and m.name.endswith(("PKG-INFO", "requires.txt")):
                    texts[m.name] = t.extractfile(m).read().decode("utf-8", "replace")
    requires: list[str] | None = None
    rp = None
    for name, text in sorted(texts.items(), key=lambda kv: kv[0].count("/")):
        if name.endswith("PKG-INFO"):
            msg = email.parser.Parser().parsestr(text)
            rp = rp or msg.get("Requires-Python")
            if msg.get_all("Requires-Dist"):
                requires = list(msg.get_all("Requires-Dist"))
        elif requires is None and ".egg-info/" in name:
            requires = _requires_txt(text)
    return requires, rp, digest


# -- choosing the file pip would install ---------------------------------------------------------
def _release_files(files: list[dict], name: str, version: str) -> list[dict]:
    want = Version(version)
    out = []
    for f in files:
        try:
            if f["filename"].endswith(".whl"):
                n, v, _, _ = parse_wheel_filename(f["filename"])
            else:
                n, v = parse_sdist_filename(f["filename"])
        except (InvalidWheelFilename, InvalidSdistFilename, InvalidVersion):
            continue
        if n == canonicalize_name(name) and v == want:
            out.append(f)
    return out


def rank(filename: str, order: dict[ptags.Tag, int]) -> int | None:
    """Preference of a file for the target (lower is better); None when it cannot install."""
    if not filename.endswith(".whl"):
        return len(order)  # an sdist: after every wheel
    try:
        _, _, _, file_tags = parse_wheel_filename(filename)
    except InvalidWheelFilename:
        return None
    ranks = [order[t] for t in file_tags if t in order]
    return min(ranks) if ranks else None


def _admits(requires_python: str | None, full: str) -> bool:
    if not requires_python:
        return True
    try:
        return SpecifierSet(requires_python).contains(full, prereleases=True)
    except Exception:  # an unparsable Requires-Python: pip ignores it too
        return True


@dataclass
class Resolved:
    name: str
    version: str
    file: str | None
    sha256: str | None
    source: str                 # "pypi" / "extra_files"
    requires: list[str]
    requires_python: str | None = None


@dataclass
class Report:
    image: str
    flavour: str
    requirements: str
    target: str
    problems: list[str] = field(default_factory=list)
    resolved: list[Resolved] = field(default_factory=list)
    not_checked: list[str] = field(default_factory=list)
    seconds: float = 0.0

    def as_dict(self) -> dict:
        return {"image": self.image, "flavour": self.flavour, "requirements": self.requirements,
                "target": self.target, "problems": self.problems, "not_checked": self.not_checked,
                "seconds": round(self.seconds, 2),
                "resolved": [{"name": r.name, "version": r.version, "file": r.file,
                              "sha256": r.sha256, "source": r.source, "requires": r.requires}
                             for r in self.resolved]}


def _pick(pin: Pin, release: list[dict], everything: list[dict], target: Target,
          order: dict) -> tuple[dict | None, str | None]:
    """The file pip would download for the pin (hash-filtered like pip), or a problem. `release`:
    the files of the pinned version (yanked ones too: pip installs a yanked file pinned with ==);
    `everything`: every file of the project."""
    if not release:
        return None, f"{pin.name}=={pin.version} is not on the index"
    usable = sorted(((rank(f["filename"], order), f) for f in release
                     if rank(f["filename"], order) is not None
                     and _admits(f["requires_python"], target.full)), key=lambda rf: rf[0])
    if not usable:
        names = ", ".join(sorted(f["filename"] for f in release))
        return None, (f"{pin.name}=={pin.version} has no file for {target.label} "
                      f"(the index has {names})")
    best = usable[0][1]
    if not pin.hashes:
        return None, (f"{pin.name}=={pin.version} has no --hash: pin the sha256 of "
                      f"{best['filename']} ({best['sha256']})")
    matching = [f for _, f in usable if f["sha256"] in pin.hashes]
    if not matching:
        owners = [f["filename"] for f in everything if f["sha256"] in pin.hashes]
        said = f"; that is the sha256 of {owners[0]}" if owners else ""
        return None, (f"{pin.name}=={pin.version}: no file of this release has the pinned sha256 "
                      f"{pin.hashes[0][:16]}...{said}; {best['filename']} has {best['sha256']}")
    chosen = matching[0]
    stale = [h for h in pin.hashes if h not in {f["sha256"] for f in release}]
    if stale:
        return None, (f"{pin.name}=={pin.version}: pinned sha256 {stale[0][:16]}... belongs to no "
                      "file of this release")
    if chosen["filename"].endswith(".whl") and pin.sdist:
        return None, (f"{pin.name}=={pin.version} is marked '# sdist' but the wheel "
                      f"{chosen['filename']} is what pip installs")
    if not chosen["filename"].endswith(".whl") and not pin.sdist:
        wheel = next((f for _, f in usable if f["filename"].endswith(".whl")), None)
        if wheel is not None:
            return None, (f"{pin.name}=={pin.version}: the pinned sha256 is the sdist's, but pip "
                          f"prefers {wheel['filename']} ({wheel['sha256']})")
        return None, (f"{pin.name}=={pin.version}: only an sdist ({chosen['filename']}) installs "
                      "on the target; mark the pin '# sdist; requires: ...'")
    return chosen, None


def extra_file_pins(spec: dict) -> list[dict]:
    """recipe.yaml extra_files of a wheelhouse, each with name, version and its wheel's filename."""
    out = []
    for e in (spec.get("wheelhouse") or {}).get("extra_files") or []:
        filename = urllib.request.url2pathname(e["url"].rsplit("/", 1)[-1])
        name, version, _, file_tags = parse_wheel_filename(filename)
        out.append({**e, "filename": filename, "name": str(name), "version": str(version),
                    "tags": file_tags})
    return out


def _sdist_requires(index: Index, pin: Pin, chosen: dict,
                    env: dict) -> tuple[list | None, str | None, str | None]:
    """(requires, Requires-Python, problem) of a pinned sdist: its digest checked, its declared
    dependencies (or the pin's '# sdist; requires:' where it declares none) agreeing."""
    requires, rp, digest = sdist_metadata(index, chosen)
    if digest != chosen["sha256"]:
        return None, rp, (f"{pin.name}=={pin.version}: {chosen['filename']} downloaded with "
                          f"sha256 {digest}, the index says {chosen['sha256']}")
    if requires is None and pin.requires is None:
        return None, rp, (f"{pin.name}=={pin.version}: the sdist declares no dependencies; "
                          "write them beside the pin ('# sdist; requires: a, b' or "
                          "'requires: none') from its setup.py")
    if requires is not None and pin.requires is not None and \
            sorted(_names(requires, env)) != sorted(_names(pin.requires, env)):
        return None, rp, (f"{pin.name}=={pin.version}: '# sdist; requires:' says "
                          f"{', '.join(pin.requires) or 'none'}, the sdist's metadata "
                          f"{', '.join(requires) or 'none'}")
    return (requires if requires is not None else pin.requires), rp, None


def _resolve(pin: Pin, index: Index, target, order: dict,
             env: dict) -> tuple[Pin, Resolved | None, str | None]:
    """(pin, its resolved file, None) or (pin, None, the problem) for one pinned requirement."""
    everything = index.files(pin.name)
    chosen, problem = _pick(pin, _release_files(everything, pin.name, pin.version), everything,
                            target, order)
    if problem:
        return pin, None, problem
    if chosen["filename"].endswith(".whl"):
        meta = wheel_metadata(index, chosen)
        requires = list(meta.get_all("Requires-Dist") or [])
        rp = meta.get("Requires-Python")
    else:
        requires, rp, problem = _sdist_requires(index, pin, chosen, env)
        if problem:
            return pin, None, problem
    if not _admits(rp, target.full):
        return pin, None, (f"{pin.name}=={pin.version}: {chosen['filename']} requires Python "
                           f"{rp}, the target is {target.full}")
    return pin, Resolved(pin.name, pin.version, chosen["filename"], chosen["sha256"], "pypi",
                         requires, rp), None


def _check_extra_files(report: Report, spec: dict, image_dir: str, target, pins: list[Pin],
                       rel: str) -> None:
    """The files the recipe fetches itself (download.pytorch.org wheels): their tags, not pinned
    twice, their dependencies listed; their sha256 and availability are not checked here."""
    wheel_tags = set(target.tags(target.expanded_platforms() + ["linux_x86_64"]))
    for e in extra_file_pins(spec):
        where = f"images/{image_dir}/recipe.yaml extra_files {e['filename']}"
        if not set(e["tags"]) & wheel_tags:
            report.problems.append(f"{where}: the wheel's tags do not install on {target.label}")
        if any(canonicalize_name(p.name) == canonicalize_name(e["name"]) for p in pins):
            report.problems.append(f"{where}: {e['name']} is also pinned in {rel}; the file is "
                                   "installed on its own (a pin without its sha256 breaks --require-hashes)")
        if e.get("requires") is None:
            report.problems.append(f"{where}: list the wheel's dependencies in `requires`")
        report.resolved.append(Resolved(e["name"], e["version"], e["filename"], e.get("sha256"),
                                        "extra_files", list(e.get("requires") or [])))
        report.not_checked.append(f"{e['filename']}: sha256 and availability at {e['url']} "
                                  f"({'pinned' if e.get('sha256') else 'recorded on first build'}; "
                                  "the host is not reachable from CI)")


def check_flavour(image_dir: str, flavour: str = "gpu", index: Index | None = None,
                  root: Path | None = None) -> Report | None:
    """The wheelhouse of one flavour, checked for its target; None when it installs no wheels."""
    root = root or images.IMAGES
    params = recipes.load_recipe(image_dir, root)
    distros = recipes.load_distros(root)
    spec = params["flavours"][flavour]
    if not spec.get("requirements"):
        return None
    started = time.monotonic()
    index = index or Index()
    target = target_for(params, flavour, distros)
    path = root / image_dir / spec["requirements"]
    rel = f"images/{image_dir}/{spec['requirements']}"
    report = Report(image_dir, flavour, rel, target.label)
    pins = parse_requirements(path.read_text(), rel)
    order = {t: i for i, t in enumerate(target.tags())}
    env = target.environment()
    with ThreadPoolExecutor(WORKERS) as pool:
        for pin, resolved, problem in pool.map(lambda p: _resolve(p, index, target, order, env), pins):
            if problem:  # still counted as pinned, so its dependants report nothing twice
                report.problems.append(f"{rel}:{pin.line}: {problem}")
                resolved = Resolved(pin.name, pin.version, None, None, "pypi", [])
            report.resolved.append(resolved)
    _check_extra_files(report, spec, image_dir, target, pins, rel)
    report.problems += closure(report.resolved, env, rel)
    if any(not r.file.endswith(".whl") for r in report.resolved if r.file):
        for tool in ("setuptools", "wheel"):
            if not any(canonicalize_name(r.name) == tool for r in report.resolved):
                report.problems.append(f"{rel}: sdists are built in the image with --no-index: "
                                       f"pin {tool}")
    report.resolved.sort(key=lambda r: canonicalize_name(r.name))
    report.seconds = time.monotonic() - started
    return report


def _names(requires: list[str], env: dict) -> list[str]:
    out = []
    for text in requires:
        req = Requirement(text)
        if req.marker is None or req.marker.evaluate({**env, "extra": ""}):
            out.append(canonicalize_name(req.name))
    return out


def closure(resolved: list[Resolved], env: dict, where: str) -> list[str]:
    """Every dependency the target needs is pinned, with a version that satisfies it."""
    have = {canonicalize_name(r.name): r for r in resolved}
    problems = []
    wanted: list[tuple[Resolved, str]] = [(r, "") for r in resolved]
    seen = set()
    while wanted:
        r, extra = wanted.pop()
        if (r.name, extra) in seen:
            continue
        seen.add((r.name, extra))
        for text in r.requires:
            try:
                req = Requirement(text)
            except InvalidRequirement:
                problems.append(f"{where}: {r.name}=={r.version} declares an unparsable "
                                f"requirement {text!r}")
                continue
            if req.marker is not None and not _marker(req.marker, env, extra):
                continue
            dep = have.get(canonicalize_name(req.name))
            cond = f" ({req.marker})" if req.marker else ""
            if dep is None:
                problems.append(f"{where}: {r.name}=={r.version} needs {req.name}{req.specifier or ''}"
                                f"{cond} on Python {env['python_full_version']}, which is not pinned")
                continue
            if req.specifier and not req.specifier.contains(dep.version, prereleases=True):
                problems.append(f"{where}: {r.name}=={r.version} needs {req.name}{req.specifier}"
                                f"{cond}; the pin is {dep.name}=={dep.version}")
            for x in req.extras:
                wanted.append((dep, x))
    return problems


def _marker(marker: Marker, env: dict, extra: str) -> bool:
    return marker.evaluate({**env, "extra": extra})


# -- everything ----------------------------------------------------------------------------------
def check(image_dirs: list[str] | None = None, flavours: tuple[str, ...] = ("gpu",),
          root: Path | None = None, index: Index | None = None, say=None) -> list[Report]:
    """Reports of every (image, flavour) that installs wheels; `say` gets one line per report."""
    index = index or Index()
    out = []
    generated = recipes.image_dirs(root)  # recipes with a `dockerfile` section (schema-checked)
    for d in [d for d in image_dirs or generated if d in generated]:
        for fl in flavours:
            r = check_flavour(d, fl, index, root)
            if r is None:
                continue
            out.append(r)
            if say:
                state = "ok" if not r.problems else f"{len(r.problems)} problem(s)"
                say(f"{d} {fl}: {len(r.resolved)} distributions for {r.target}: {state} "
                    f"({r.seconds:.1f} s)")
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m reprokit.containers.wheelhouse",
                                description=__doc__.splitlines()[0])
    p.add_argument("--check", action="store_true", help="check (the only action; kept for clarity)")
    p.add_argument("--image", nargs="+", metavar="DIR", help="these image dirs (default: all)")
    p.add_argument("--flavour", choices=("gpu", "cpu", "all"), default="gpu")
    p.add_argument("--json", type=Path, metavar="FILE", help="also write the reports as JSON")
    args = p.parse_args(argv)
    flavours = ("cpu", "gpu") if args.flavour == "all" else (args.flavour,)
    started = time.monotonic()
    say = lambda msg: print(msg, file=sys.stderr, flush=True)  # noqa: E731
    try:
        index = Index()
        reports = check(args.image, flavours, index=index, say=say)
    except IndexError_ as e:
        print(f"error: the package index cannot be read: {e}", file=sys.stderr)
        return 2
    except UserError as e:
        print(f"error: {e}", file=sys.stderr)
        return e.exit_code
    problems = [line for r in reports for line in r.problems]
    for line in problems:
        print(line)
    for r in reports:
        for line in r.not_checked:
            say(f"not checked here: {line}")
    say(f"{len(reports)} wheelhouses, {len(problems)} problem(s), {index.requests} requests, "
        f"{index.bytes / 1e6:.1f} MB, {time.monotonic() - started:.1f} s")
    if args.json:
        args.json.write_text(json.dumps([r.as_dict() for r in reports], indent=1) + "\n")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())

"""Pre-fetch TensorFlow's external archives (with their sha256) before Bazel runs, then serve them.

    python3 tf_deps.py fetch SRC DEPS [--list FILE] [--record FILE]
    python3 tf_deps.py serve DEPS SRC -- COMMAND ...

`fetch` reads every archive TensorFlow's own Bazel files pin (WORKSPACE and the *.bzl files under
tensorflow/ and third_party/ of the source tree SRC: each rule with `sha256 = "..."` and
`urls = [...]` / `url = "..."`, and closure's `sha256_urls = {sha256: [urls]}`), downloads each one
into DEPS/<sha256>/<file>, trying the rule's URLs in order and then the Bazel/TensorFlow mirrors of
each URL, and keeps it only when its sha256 is the one pinned in the source. It writes the list
"<sha256>  <rule name>  <url it came from>" to --list and appends "<sha256>  <file>  <url>" to
--record (the kit's downloads.sha256, copied into the lock file by reproduce.py build). An archive
no URL serves with its pinned sha256 stops the build, naming the archive, its sha256 and every URL
tried (a copy with that sha256 can be put into DEPS/<sha256>/ beforehand).

`serve` rewrites every URL of a fetched archive in those files to a local HTTP server on 127.0.0.1
that serves DEPS, runs COMMAND (configure and the Bazel build) in SRC and stops the server: Bazel
fetches nothing from the network and still checks every sha256 itself.

Runs on the image's Python 3.5 (no f-strings), standard library only.
"""
from __future__ import print_function

import hashlib
import os
import re
import socketserver
import subprocess
import sys
import threading
from http.server import HTTPServer, SimpleHTTPRequestHandler

try:
    from urllib.parse import urlsplit
    from urllib.request import Request, urlopen
except ImportError:  # pragma: no cover
    raise SystemExit("tf_deps.py needs Python 3")

SHA = re.compile(r'sha256\s*=\s*"([0-9a-f]{64})"')
NAME = re.compile(r'\bname\s*=\s*"([^"]+)"')
URLS = re.compile(r'\burls\s*=\s*\[([^\]]*)\]', re.S)
URL = re.compile(r'\burl\s*=\s*"([^"]+)"')
SHA_URLS = re.compile(r'"([0-9a-f]{64})"\s*:\s*\[([^\]]*)\]', re.S)
QUOTED = re.compile(r'"([^"]+)"')
# Where Bazel's and TensorFlow's own mirrors keep a copy of "<host>/<path>" [S: the mirror URLs in
# TensorFlow's workspace.bzl of 2017-2019]; whether they still hold the 1.2.1 archives is [U].
MIRRORS = ("https://mirror.bazel.build/",
           "https://storage.googleapis.com/mirror.bazel.build/",
           "https://storage.googleapis.com/mirror.tensorflow.org/",
           "http://bazel-mirror.storage.googleapis.com/")
CHUNK = 1 << 20


def bazel_files(src):
    out = [os.path.join(src, "WORKSPACE")]
    for top in ("tensorflow", "third_party"):
        for root, dirs, files in os.walk(os.path.join(src, top)):
            dirs.sort()
            out += [os.path.join(root, f) for f in sorted(files) if f.endswith(".bzl")]
    return [p for p in out if os.path.isfile(p)]


def calls(text):
    """(start, end) of every parenthesised call block in a Bazel file (strings respected)."""
    spans, stack, i, n = [], [], 0, len(text)
    while i < n:
        c = text[i]
        if c == "#":
            j = text.find("\n", i)
            i = n if j < 0 else j
            continue
        if c in "\"'":
            q = c * 3 if text.startswith(c * 3, i) else c
            j = text.find(q, i + len(q))
            i = n if j < 0 else j + len(q)
            continue
        if c == "(":
            stack.append(i)
        elif c == ")" and stack:
            start = stack.pop()
            if not stack:
                spans.append((start, i + 1))
        i += 1
    return spans


def archives(src):
    """[{name, sha256, urls, file}] of every pinned archive, deduplicated by sha256."""
    found = {}
    for path in bazel_files(src):
        with open(path) as f:
            text = f.read()
        for start, end in calls(text):
            block = text[start:end]
            name = NAME.search(block)
            for sha, body in SHA_URLS.findall(block):  # closure's filegroup_external
                urls = QUOTED.findall(body)
                found.setdefault(sha, {"name": name.group(1) if name else "?", "sha256": sha,
                                       "urls": urls, "where": path})
            shas = SHA.findall(block)
            if len(shas) != 1:
                continue
            urls = []
            m = URLS.search(block)
            if m:
                urls = QUOTED.findall(m.group(1))
            urls += URL.findall(block)
            if urls:
                found.setdefault(shas[0], {"name": name.group(1) if name else "?",
                                           "sha256": shas[0], "urls": urls, "where": path})
    out = []
    for a in found.values():
        a["file"] = os.path.basename(urlsplit(a["urls"][0]).path) or "archive"
        out.append(a)
    return sorted(out, key=lambda a: a["name"])


def origin(url):
    """"<host>/<path>" of the original location of url (a mirror URL's own tail)."""
    bare = re.sub(r"^https?://", "", url)
    for m in MIRRORS:
        prefix = re.sub(r"^https?://", "", m)
        if bare.startswith(prefix):
            return bare[len(prefix):]
    return bare


def candidates(urls):
    """The rule's URLs, then each one's copies under every mirror."""
    out = list(urls) + [m + origin(u) for u in urls for m in MIRRORS]
    seen, uniq = set(), []
    for u in out:
        if u not in seen:
            seen.add(u)
            uniq.append(u)
    return uniq


def sha256_of(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(CHUNK), b""):
            h.update(block)
    return h.hexdigest()


def download(url, target, want):
    """True when url gave a file whose sha256 is want (kept at target), else False."""
    tmp = target + ".part"
    try:
        req = Request(url, headers={"User-Agent": "reprokit-tf-deps"})
        with urlopen(req, timeout=300) as r, open(tmp, "wb") as f:
            while True:
                block = r.read(CHUNK)
                if not block:
                    break
                f.write(block)
    except Exception as e:  # noqa: BLE001 - every failure means: try the next URL
        print("  %s: %s" % (url, e), file=sys.stderr)
        if os.path.exists(tmp):
            os.remove(tmp)
        return False
    got = sha256_of(tmp)
    if got != want:
        print("  %s: sha256 %s, not the pinned %s" % (url, got, want), file=sys.stderr)
        os.remove(tmp)
        return False
    os.rename(tmp, target)
    return True


def fetch(src, deps, listing=None, record=None):
    todo = archives(src)
    if not todo:
        raise SystemExit("tf_deps.py: no pinned archive found under %s" % src)
    lines, records, missing = [], [], []
    for a in todo:
        folder = os.path.join(deps, a["sha256"])
        if not os.path.isdir(folder):
            os.makedirs(folder)
        target = os.path.join(folder, a["file"])
        have = [os.path.join(folder, f) for f in os.listdir(folder) if not f.endswith(".part")]
        ok = [p for p in have if sha256_of(p) == a["sha256"]]
        used = "pre-placed copy"
        if ok:
            if ok[0] != target:
                os.rename(ok[0], target)
        else:
            tried = candidates(a["urls"])
            used = next((u for u in tried if download(u, target, a["sha256"])), None)
            if used is None:
                missing.append("%s (sha256 %s; tried %s)" % (a["name"], a["sha256"], ", ".join(tried)))
                continue
        print("%s  %s  %s" % (a["sha256"], a["name"], used))
        lines.append("%s  %s  %s\n" % (a["sha256"], a["name"], used))
        records.append("%s  %s  %s\n" % (a["sha256"], a["file"], used))
    if missing:
        raise SystemExit("tf_deps.py: %d archive(s) with no URL serving the pinned sha256: %s; put a "
                         "copy with that sha256 into %s/<sha256>/ and build again"
                         % (len(missing), "; ".join(missing), deps))
    for path, text in ((listing, lines), (record, records)):
        if path:
            with open(path, "a") as f:
                f.writelines(text)
    return len(lines)


def rewrite(src, base):
    """Every URL of a pinned archive -> base/<sha256>/<file> (in place); returns the count."""
    n = 0
    table = {}
    for a in archives(src):
        for u in a["urls"]:
            table[u] = "%s/%s/%s" % (base, a["sha256"], a["file"])
    for path in bazel_files(src):
        with open(path) as f:
            text = f.read()
        new = QUOTED.sub(lambda m: '"%s"' % table.get(m.group(1), m.group(1)), text)
        if new != text:
            n += sum(1 for u in table if '"%s"' % u in text)
            with open(path, "w") as f:
                f.write(new)
    return n


class _Server(socketserver.ThreadingMixIn, HTTPServer):
    daemon_threads = True


class _Quiet(SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


def serve(deps, src, command):
    deps, src = os.path.abspath(deps), os.path.abspath(src)
    os.chdir(deps)  # SimpleHTTPRequestHandler serves the current directory (Python 3.5)
    server = _Server(("127.0.0.1", 0), _Quiet)
    base = "http://127.0.0.1:%d" % server.server_address[1]
    print("tf_deps.py: %d URL(s) now point at %s" % (rewrite(src, base), base))
    thread = threading.Thread(target=server.serve_forever)
    thread.daemon = True
    thread.start()
    try:
        return subprocess.call(command, cwd=src)
    finally:
        server.shutdown()


def main(argv):
    if len(argv) >= 3 and argv[0] == "fetch":
        opts = dict(zip(argv[3::2], argv[4::2]))
        fetch(argv[1], argv[2], opts.get("--list"), opts.get("--record"))
        return 0
    if len(argv) >= 5 and argv[0] == "serve" and argv[3] == "--":
        return serve(argv[1], argv[2], argv[4:])
    print(__doc__.split("\n\n")[1], file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

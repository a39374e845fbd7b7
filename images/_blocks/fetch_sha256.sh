#!/bin/sh
# fetch_sha256.sh URL OUT [SHA256]
# Downloads URL to OUT and appends "<sha256>  <file>  <url>" to /opt/reprokit/provenance/downloads.sha256.
# With SHA256 given, a different sum fails the build. With SHA256 empty the sum is "recorded on first
# build": the build step (reproduce.py build) reads downloads.sha256 from the image, writes the sum to
# the lock file and passes it back as a build arg on later builds, where it is then enforced.
# The one copy lives in images/_blocks/; reproduce.py build copies it into the build context of every
# recipe whose Dockerfile COPYs it (reprokit/containers/images.py shared_files).
set -eu
url=$1
out=$2
want=${3:-}
mkdir -p /opt/reprokit/provenance
curl -fsSL --retry 3 -o "$out" "$url"
got=$(sha256sum "$out" | cut -d' ' -f1)
echo "$got  $(basename "$out")  $url" >> /opt/reprokit/provenance/downloads.sha256
if [ -z "$want" ]; then
    echo "sha256 recorded on first build: $got  $url"
elif [ "$got" != "$want" ]; then
    echo "sha256 mismatch for $url: expected $want, got $got" >&2
    exit 1
fi

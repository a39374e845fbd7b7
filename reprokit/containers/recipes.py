"""Dockerfiles generated from recipes (HPC Container Maker style): images/<dir>/Dockerfile is the
layout template of images/_blocks/ (single-stage.j2 or two-stage.j2, which compose the building
blocks there) rendered with the parameters of images/<dir>/recipe.yaml and the base distributions
of images/_blocks/distros.yaml (every OS package pin, Python, pip, NVIDIA apt repositories).

    python -m reprokit.containers.recipes           rewrite every images/*/Dockerfile
    python -m reprokit.containers.recipes --check   exit 1 listing the Dockerfiles that differ from
                                                    their recipe

recipe.yaml and distros.yaml are validated against reprokit/schemas/{recipe,distros}.schema.json and
cross-checked here (a package without a pin, a fetch of an undeclared download, a download nothing
fetches, a sha256 without a cited source or the "recorded on first build" marker): each is a one-line
UserError naming the file and the fix.
"""

from __future__ import annotations

import argparse
import copy
import os
import posixpath
import re
import sys
import textwrap
import urllib.parse
from pathlib import Path

import jinja2
import yaml

from reprokit import files, validate
from reprokit.containers import generated
from reprokit.errors import UserError

REPO = files.REPO
IMAGES = Path(os.environ.get("REPROKIT_IMAGES_DIR") or files.IMAGES)  # the recipes' folder
BLOCKS_DIR = "_blocks"  # shared building blocks; "_" keeps it apart from the image directories
FETCH = "fetch_sha256.sh"  # the verified download helper, copied into build contexts that use it
MARKER = "recorded on first build"
WIDTH = 100
FLAVOURS = ("cpu", "gpu")
STUB_DIR = "/opt/reprokit/cuda-stub"  # build stage: the CUDA driver stub, as libcuda.so.1
VENV = "/opt/venv"  # the images' virtualenv (images/_blocks/wheelhouse.j2, runtime.j2)
SYSTEM_PYTHON = "/usr/bin/python3"  # the Debian/Ubuntu python3 package of an image without one


def blocks(root: Path | None = None) -> Path:
    """The shared building blocks: <root>/_blocks, else the repository's images/_blocks."""
    own = (root or IMAGES) / BLOCKS_DIR
    return own if own.is_dir() else files.IMAGES / BLOCKS_DIR


def image_dirs(root: Path | None = None) -> list[str]:
    """Image directories that have a recipe.yaml with a `dockerfile` section."""
    root = root or IMAGES
    out = []
    for p in sorted(root.iterdir()):
        if p.is_dir() and not p.name.startswith("_") and (p / "recipe.yaml").is_file():
            if "dockerfile" in (_yaml(p / "recipe.yaml") or {}):
                out.append(p.name)
    return out


# -- loading and checking --------------------------------------------------------------------------
def _yaml(path: Path):
    try:
        return files.load_yaml(path.read_text())
    except (OSError, yaml.YAMLError) as e:
        raise UserError(f"{path} is not readable YAML ({e})") from e
    except ValueError as e:  # a key given twice, a non-finite float, a value YAML cannot build
        raise UserError(f"{path}: {e}; correct the file") from e


def _where(path: Path) -> str:
    return str(path.relative_to(REPO)) if path.is_relative_to(REPO) else str(path)


def load_distros(root: Path | None = None) -> dict[str, dict]:
    path = blocks(root) / "distros.yaml"
    doc = _yaml(path)
    validate.check("distros", doc, _where(path))
    return doc["distros"]


def load_recipe(image_dir: str, root: Path | None = None) -> dict:
    path = (root or IMAGES) / image_dir / "recipe.yaml"
    doc = _yaml(path)
    validate.check("recipe", doc, _where(path))
    if doc["image"] != image_dir:
        raise UserError(f"{_where(path)}: image is {doc['image']!r}, not its directory {image_dir!r}")
    return doc


def stacks_of(image_dir: str) -> list[str]:
    """The stacks that run in the image, in stacks.yaml's order (the only place that says so)."""
    from reprokit.catalog.suites import load_stacks

    stacks = [name for name, spec in load_stacks().items() if spec["image"] == image_dir]
    if not stacks:
        raise _fail(image_dir, "no stack of reprokit/data/stacks.yaml runs in this image (`image: "
                    f"{image_dir}`); add one there")
    return stacks


def _fail(image_dir: str, msg: str) -> UserError:
    return UserError(f"images/{image_dir}/recipe.yaml: {msg}")


def _pins(image_dir: str, names: list[str], table: dict[str, str], base: str, what: str) -> list[str]:
    missing = [n for n in names if n not in table]
    if missing:
        raise _fail(image_dir, f"{what} {', '.join(missing)} has no pin for {base} in "
                    "images/_blocks/distros.yaml; add it there with its evidence")
    return [f"{n}={table[n]}" for n in names]


def repo_downloads(params: dict, distros: dict, flavour: str) -> list[dict]:
    """The signing keys of the NVIDIA apt repositories the flavour's system blocks add, as downloads
    (url_arg, url, file, to, sha256_arg, sha256, source, about, key_id, list)."""
    df = params.get("dockerfile") or {}
    base = params["flavours"][flavour]["build_args"]["BASE_IMAGE"]
    names: list[str] = []
    for stage in ("build", "final"):
        names += ((df.get(stage) or {}).get(flavour) or {}).get("nvidia_repos") or []
    if not names:
        return []
    repos = ((distros.get(base) or {}).get("nvidia") or {}).get("repos") or {}
    missing = [n for n in names if n not in repos]
    if missing:
        raise _fail(params["image"], f"the {flavour} flavour adds NVIDIA apt repositories "
                    f"{', '.join(missing)} but {base} has none such in images/_blocks/distros.yaml")
    return [{**repos[n], "to": f"/tmp/{repos[n]['file']}"} for n in dict.fromkeys(names)]


def downloads(params: dict, flavour: str, distros: dict | None = None) -> list[dict]:
    """Every download of the flavour: NVIDIA repository keys, then recipe.yaml's own downloads."""
    if "dockerfile" not in params:
        return list(params["flavours"][flavour].get("downloads") or [])
    distros = distros if distros is not None else load_distros()
    return repo_downloads(params, distros, flavour) + list(
        params["flavours"][flavour].get("downloads") or [])


def _check_downloads(image_dir: str, dls: list[dict]) -> None:
    for d in dls:
        notes = d["source"]
        if d.get("sha256") and not re.search(r"\[[SV]\b", notes):
            raise _fail(image_dir, f"{d['sha256_arg']} has a sha256 without a cited source ([S ...] or "
                        "[V ...]) in its `source`")
        if not d.get("sha256") and MARKER not in notes:
            raise _fail(image_dir, f"{d['sha256_arg']} has no sha256: its `source` must say "
                        f"'{MARKER}'")


# -- the render context ----------------------------------------------------------------------------
def _system(image_dir: str, flavour: str, spec: dict, base: str, distro: dict,
            by_arg: dict[str, dict], check_os: bool) -> dict:
    """One flavour's OS packages in one stage, with every pin resolved and every fetch checked."""
    steps, fetched = [], []
    for s in spec.get("steps") or []:
        if isinstance(s, dict):
            if s["fetch"] not in by_arg:
                raise _fail(image_dir, f"a step fetches {s['fetch']}, which no download declares")
            steps.append({"fetch": by_arg[s["fetch"]]})
            fetched.append(s["fetch"])
        else:
            steps.append({"run": s})
    nvidia = [by_arg[distro["nvidia"]["repos"][n]["url_arg"]] for n in spec.get("nvidia_repos") or []]
    fetches = bool(nvidia or fetched)
    names = list(dict.fromkeys((distro["key_tools"] if fetches else []) + (spec.get("packages") or [])))
    if not names:
        raise _fail(image_dir, "a system block installs no packages; drop it")
    cuda = spec.get("cuda")
    if cuda is not None:
        table = (distro.get("nvidia") or {}).get("packages") or {}
        cuda = {"version": cuda["version"], "ldconfig": cuda.get("ldconfig", True),
                "packages": _pins(image_dir, cuda["packages"], table, base, "NVIDIA package")}
    cleanup = ["/var/lib/apt/lists/*"] + (["/tmp/*.pub"] if nvidia else []) + (spec.get("cleanup") or [])
    comment = spec.get("comment") or f"{flavour}: {distro['codename']} packages, {distro['pins']}."
    return {"flavour": flavour, "comment": comment,
            "packages": _pins(image_dir, names, distro["packages"], base, "package"),
            "repos": nvidia, "cuda": cuda, "steps": steps, "cleanup": cleanup,
            "check_os": {"version_id": distro["version_id"], "base": base} if check_os else None,
            "fetched": [r["url_arg"] for r in nvidia] + fetched}


def _stage(image_dir: str, spec: dict | None, params: dict, distros: dict, by_arg: dict, first: bool,
           single: bool, root: Path | None) -> dict:
    spec = spec or {}
    flavours = params["flavours"]
    cpu_base = flavours["cpu"]["build_args"]["BASE_IMAGE"]
    systems = {}
    for fl in FLAVOURS:
        if not spec.get(fl):
            continue
        base = flavours[fl]["build_args"]["BASE_IMAGE"]
        systems[fl] = _system(image_dir, fl, spec[fl], base, distros[base], by_arg,
                              check_os=first and fl == "gpu" and base != cpu_base)
    fetched = [a for s in systems.values() for a in s["fetched"]]
    files = ([FETCH] if fetched else []) + list(spec.get("files") or [])
    for f in spec.get("files") or []:
        if not ((root or IMAGES) / image_dir / f).is_file() and not (blocks(root) / f).is_file():
            raise _fail(image_dir, f"{f} is neither in images/{image_dir}/ nor in images/_blocks/")
    dirs = list(spec.get("dirs") or [])
    return {"systems": systems, "files": files, "dirs": dirs, "title": spec.get("title"),
            "downloads": [by_arg[a] for a in dict.fromkeys(fetched)],
            "apt": bool(systems), "mkdir": bool(fetched or dirs or (single and systems)),
            "after_venv": spec.get("after_venv"), "copy_from_build": spec.get("copy_from_build") or []}


def has_venv(params: dict) -> bool:
    """A recipe installs requirements into a virtualenv (VENV) iff a flavour has requirements."""
    return any(params["flavours"][fl]["requirements"] for fl in FLAVOURS)


def interpreter(image_dir: str, root: Path | None = None) -> str:
    """The image's Python by absolute path, as every container launcher runs it: the venv's
    (images/_blocks/wheelhouse.j2 creates VENV, runtime.j2 puts its bin/ first on PATH), else the
    base's python3 package (every base in distros.yaml is Debian or Ubuntu). An image without a
    recipe.yaml: `python3` as its PATH finds it."""
    if not ((root or IMAGES) / image_dir / "recipe.yaml").is_file():
        return "python3"
    return f"{VENV}/bin/python3" if has_venv(load_recipe(image_dir, root)) else SYSTEM_PYTHON


def _venv(image_dir: str, params: dict, distros: dict) -> dict | None:
    flavours = params["flavours"]
    reqs = {fl: flavours[fl]["requirements"] for fl in FLAVOURS}
    if not has_venv(params):
        return None
    for fl, name in reqs.items():
        if name != f"requirements-{fl}.txt":
            raise _fail(image_dir, f"the {fl} flavour must install requirements-{fl}.txt (COPY "
                        "requirements-${FLAVOUR}.txt), not " + repr(name))
    df = params["dockerfile"]
    spec = df.get("venv") or {}
    pip = (distros.get(flavours["gpu"]["build_args"]["BASE_IMAGE"]) or {}).get("venv_pip")
    notes = [pip["note"]] if pip else []
    if spec.get("comment"):
        notes.append(spec["comment"].rstrip("."))
    extra = [urllib.parse.unquote(e["url"].rsplit("/", 1)[-1])
             for e in (flavours["gpu"].get("wheelhouse") or {}).get("extra_files") or []]
    if extra:
        notes.append("then the wheels of recipe.yaml extra_files (not on PyPI; reproduce.py build "
                     "downloaded them into ./wheels with their sha256 checked or recorded) by path, "
                     "without dependencies (those are pinned in requirements-gpu.txt)")
    return {"pip": pip["version"] if pip else None,
            "comment": f"gpu: {'; '.join(notes)}." if notes else None,
            "extra": extra, "gpu": spec.get("gpu") or []}


def context(image_dir: str, root: Path | None = None, params: dict | None = None,
            distros: dict | None = None) -> dict:
    """Everything the layout templates need, derived from recipe.yaml and distros.yaml."""
    params = params or load_recipe(image_dir, root)
    distros = distros if distros is not None else load_distros(root)
    df = params["dockerfile"]
    flavours = params["flavours"]
    for fl in FLAVOURS:
        base = flavours[fl]["build_args"]["BASE_IMAGE"]
        if base not in distros:
            raise _fail(image_dir, f"the {fl} base {base} is not in images/_blocks/distros.yaml")
    dls = [d for fl in FLAVOURS for d in downloads(params, fl, distros)]
    by_arg = {d["url_arg"]: {**d, "name": d.get("file") or posixpath.basename(d["url"])} for d in dls}
    _check_downloads(image_dir, list(by_arg.values()))
    two = "build" in df
    stub = df.get("cuda_stub")
    build_spec = df.get("build")
    if stub:
        if not two:
            raise _fail(image_dir, "`cuda_stub` needs the two-stage layout (a `build` section): the "
                        "import check runs in a stage of its own")
        build_spec = copy.deepcopy(build_spec or {})
        build_spec["dirs"] = list(build_spec.get("dirs") or []) + [STUB_DIR]
        gpu_spec = build_spec.setdefault("gpu", {})
        gpu_spec["steps"] = list(gpu_spec.get("steps") or []) + [
            f"cp {stub['source']} {STUB_DIR}/libcuda.so.1"]
    build = _stage(image_dir, build_spec, params, distros, by_arg, True, False, root) if two else None
    final = _stage(image_dir, df.get("final"), params, distros, by_arg, not two, not two, root)
    fetched = (build["downloads"] if build else []) + final["downloads"]
    unused = set(by_arg) - {d["url_arg"] for d in fetched}
    if unused:
        raise _fail(image_dir, f"downloads {', '.join(sorted(unused))} are never fetched; add a "
                    "`fetch:` step or drop them")
    gpu = flavours["gpu"]
    gpu_capable = "NVIDIA_REQUIRE_CUDA" in gpu["build_args"]
    venv = _venv(image_dir, params, distros)
    if venv is None and (df.get("framework") or df.get("venv")):
        raise _fail(image_dir, "`framework`/`venv` need requirements files")
    if venv is not None and not df.get("framework"):
        raise _fail(image_dir, "a recipe with a virtualenv needs `framework` (the import check)")
    return {
        "image": image_dir, "stacks": stacks_of(image_dir), "era": params["era"],
        "about": df["about"], "labels": df["labels"], "args": df.get("args") or [],
        "assert_python": df.get("assert_python"), "gpu_capable": gpu_capable,
        "gpu_status": gpu["status"], "downloads": fetched, "two_stage": two,
        "build": build, "final": final, "venv": venv,
        "path": df.get("path") or [], "env": df.get("env") or {}, "env_comment": df.get("env_comment"),
        "framework": df.get("framework"), "framework_gpu": df.get("framework_gpu"),
        "cuda_stub": {"dir": STUB_DIR, "comment": stub["comment"]} if stub else None,
        "python": "python" if venv else "python3",
    }


# -- rendering -------------------------------------------------------------------------------------
def _comment(text: str) -> str:
    out = []
    for line in str(text).rstrip().split("\n"):
        if not line.strip():
            out.append("#")
            continue
        lead = line[: len(line) - len(line.lstrip())]
        out += ["# " + w for w in textwrap.wrap(line, WIDTH - 2, subsequent_indent=lead,
                                                 break_on_hyphens=False, break_long_words=False)]
    return "\n".join(out)


def _continued(text: str) -> str:
    """Join non-empty lines with Dockerfile line continuations."""
    return " \\\n".join(line.rstrip() for line in str(text).split("\n") if line.strip())


def _run(cmds: list[str]) -> str:
    """RUN cmd1 && cmd2 ...: a command's continuation lines are indented from column 7 (where the
    commands after `    && ` start); an item may hold several commands, each after the first on a
    line that starts with `&& `."""
    split: list[str] = []
    for item in (str(c).strip("\n") for c in cmds if c and str(c).strip()):
        for cmd in re.split(r"\n(?=&& )", item):
            split.append(cmd[3:] if cmd.startswith("&& ") else cmd)
    lines = []
    for i, cmd in enumerate(split):
        first, *rest = cmd.split("\n")
        lines.append(("RUN " if i == 0 else "    && ") + first)
        lines += [" " * 7 + r for r in rest if r.strip()]
    return _continued("\n".join(lines))


def _step(text: str) -> str:
    """A shell step written after `&& `: its continuation lines keep their indentation, plus 3."""
    first, *rest = str(text).strip("\n").split("\n")
    return "\n".join([first] + ["   " + r.rstrip() for r in rest if r.strip()])


def _words(items: list[str], single: int = 60) -> str:
    """Arguments on the same line when short, else on continuation lines (indent 5, 100 columns)."""
    text = " ".join(items)
    if len(text) <= single:
        return " " + text
    return "\n" + "\n".join("     " + w for w in textwrap.wrap(text, WIDTH - 14, break_on_hyphens=False,
                                                               break_long_words=False))


def _quoted(value: str) -> str:
    value = str(value)
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"' if re.search(r'[\s"\'#]', value) \
        else value


def environment(root: Path | None = None) -> jinja2.Environment:
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(str(blocks(root))),
                             undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True,
                             keep_trailing_newline=True, autoescape=False, extensions=["jinja2.ext.do"])
    env.filters.update(comment=_comment, continued=_continued, run=_run, step=_step, words=_words,
                       quoted=_quoted, var=lambda name: "${%s}" % name)
    return env


def render(image_dir: str, root: Path | None = None) -> str:
    ctx = context(image_dir, root)
    layout = "two-stage.j2" if ctx["two_stage"] else "single-stage.j2"
    text = environment(root).get_template(layout).render(r=ctx)
    text = re.sub(r"\n{3,}", "\n\n", text).strip("\n") + "\n"
    return text


def expected_files(root: Path | None = None) -> dict[str, str]:
    """images/<dir>/Dockerfile (relative to the images folder) -> generated text."""
    return {f"{d}/Dockerfile": render(d, root) for d in image_dirs(root)}


def write_all(root: Path | None = None) -> list[Path]:
    return generated.write(root or IMAGES, expected_files(root))


def is_stale(image_dir: str, root: Path | None = None) -> bool:
    """True when images/<dir>/ has a generating recipe and its Dockerfile differs from it."""
    root = root or IMAGES
    recipe = root / image_dir / "recipe.yaml"
    if not recipe.is_file() or "dockerfile" not in (_yaml(recipe) or {}):
        return False
    dockerfile = root / image_dir / "Dockerfile"
    return not dockerfile.is_file() or dockerfile.read_text() != render(image_dir, root)


def stale_files(root: Path | None = None) -> list[str]:
    return generated.stale(root or IMAGES, expected_files(root))


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m reprokit.containers.recipes",
                                description=__doc__.splitlines()[0])
    p.add_argument("--check", action="store_true", help="only compare; exit 1 when a Dockerfile is stale")
    args = p.parse_args(argv)
    try:
        return generated.run(args.check, stale_files, write_all, "images",
                             "python -m reprokit.containers.recipes")
    except UserError as e:
        print(f"error: {e}", file=sys.stderr)
        return e.exit_code


if __name__ == "__main__":
    sys.exit(main())

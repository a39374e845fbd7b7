"""The image store: stack images' recipes under images/<dir>/, tags by a hash of the build inputs,
the lock file, and what the engine holds (a built image, the presence probe). Building is
reprokit/containers/build.py, Dockerfile generation reprokit/containers/recipes.py.

Tags:   reprokit/<dir>:<flavour>-<hash12>  the exact build; hash12 = first 12 hex digits of the
                                           sha256 over every context file (path + sha256; the
                                           shared files of images/_blocks/ the Dockerfile COPYs
                                           are context files too), the build args and the base
                                           image's ID
        reprokit/<dir>:<flavour>           moving alias to the newest build (what compose files use)
Recipes: images/<dir>/ (REPROKIT_IMAGES_DIR overrides the folder); each Dockerfile is generated
        from its recipe.yaml and images/_blocks/ by reprokit/containers/recipes.py, which is also
        the one reader of recipe.yaml (validated against its schema).
Stacks: reprokit/data/stacks.yaml alone says which image a stack runs in (`image`); recipe.yaml
        does not repeat it (recipes.stacks_of derives an image's stacks from it).
Lock:   images/lock.json (REPROKIT_IMAGE_LOCK overrides), one entry per "<dir>:<flavour>": tags,
        built image ID, base image name/ID, build args, sha256 of every context file (wheels
        included; computed when the file is first hashed, never typed in), engine version, time.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

from reprokit import files, formats, validate
from reprokit.containers import recipes
from reprokit.containers.recipes import IMAGES
from reprokit.errors import UserError

BASE_IMAGE = "reprokit/base:bookworm"
REPOSITORY = "reprokit"
FLAVOURS = ("cpu", "gpu")
WHEELS = "wheels"  # wheelhouse directory inside the build context


# -- names ---------------------------------------------------------------------------------------
def alias_tag(image_dir: str, flavour: str) -> str:
    return f"{REPOSITORY}/{image_dir}:{flavour}"


def exact_tag(image_dir: str, flavour: str, inputs_hash: str) -> str:
    return f"{REPOSITORY}/{image_dir}:{flavour}-{inputs_hash[:12]}"


def lock_key(image_dir: str, flavour: str) -> str:
    return f"{image_dir}:{flavour}"


def lock_path(path: Path | None = None) -> Path:
    return Path(path or os.environ.get("REPROKIT_IMAGE_LOCK") or files.IMAGES / "lock.json")


# -- hashing -------------------------------------------------------------------------------------
def file_sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def inputs_hash(files: dict[str, str], build_args: dict[str, str], base_id: str) -> str:
    doc = {"files": dict(sorted(files.items())), "build_args": dict(sorted(build_args.items())),
           "base_image_id": base_id}
    return hashlib.sha256(json.dumps(doc, sort_keys=True).encode()).hexdigest()


def context_files(ctx: Path) -> dict[str, str]:
    return {str(p.relative_to(ctx)): file_sha256(p) for p in sorted(ctx.rglob("*")) if p.is_file()}


# -- recipes -------------------------------------------------------------------------------------
_ARG = re.compile(r"^\s*ARG\s+([A-Za-z_][A-Za-z0-9_]*)(?:=(\S*))?", re.MULTILINE)


_COPY = re.compile(r"^\s*COPY\s+(.+)$", re.MULTILINE | re.IGNORECASE)


def dockerfile_copies(text: str) -> list[str]:
    """Sources of the Dockerfile's COPY instructions from the build context (not --from=stage)."""
    text = re.sub(r"\\\n", " ", text)
    out: list[str] = []
    for rest in _COPY.findall(text):
        tokens = rest.split()
        if any(t.startswith("--from") for t in tokens):
            continue
        out += [t for t in tokens if not t.startswith("--")][:-1]
    return list(dict.fromkeys(out))


def dockerfile_args(text: str) -> dict[str, str | None]:
    """ARG name -> default (None when it has none), first declaration wins."""
    text = re.sub(r"\\\n", " ", text)
    out: dict[str, str | None] = {}
    for name, default in _ARG.findall(text):
        out.setdefault(name, default.strip("\"'") if default else None)
    return out


@dataclass
class Recipe:
    """images/<dir>/: a Dockerfile and, normally, recipe.yaml with each flavour's exact build args,
    requirement file, wheelhouse command and downloads. Without recipe.yaml only the cpu flavour
    can be built (BASE_IMAGE and FLAVOUR passed when the Dockerfile declares them)."""

    image_dir: str
    path: Path

    @property
    def dockerfile(self) -> str:
        return (self.path / "Dockerfile").read_text()

    @property
    def args(self) -> dict[str, str | None]:
        return dockerfile_args(self.dockerfile)

    @cached_property
    def params(self) -> dict | None:
        """recipe.yaml, validated (reprokit/containers/recipes.py load_recipe); None without one."""
        if not (self.path / "recipe.yaml").is_file():
            return None
        return recipes.load_recipe(self.image_dir, self.path.parent)

    def flavour(self, flavour: str) -> dict | None:
        params = self.params
        if params is None:
            return None
        spec = params.get("flavours", {}).get(flavour)
        if spec is None:
            raise UserError(f"images/{self.image_dir}/recipe.yaml has no {flavour} flavour")
        return spec

    def requirements(self, flavour: str) -> list[Path]:
        """The requirement file pip downloads for (recipe.yaml `requirements`; without recipe.yaml
        requirements-<flavour>.txt when present); none for a recipe that installs no wheels."""
        spec = self.flavour(flavour)
        names = [spec["requirements"]] if spec and spec.get("requirements") else []
        if spec is None:
            names = [n for n in (f"requirements-{flavour}.txt",) if (self.path / n).is_file()]
        for n in names:
            if not (self.path / n).is_file():
                raise UserError(f"images/{self.image_dir}: requirement file {n} is missing")
        return [self.path / n for n in names]

    def pip_flags(self, flavour: str) -> list[str]:
        """Target-interpreter flags of recipe.yaml's wheelhouse command (gpu: e.g. Python 3.5)."""
        spec = self.flavour(flavour) or {}
        cmd = list((spec.get("wheelhouse") or {}).get("command") or [])
        keep, out, i = ("--python-version", "--implementation", "--abi", "--platform"), [], 0
        while i < len(cmd):
            if cmd[i] in keep and i + 1 < len(cmd):
                out += cmd[i:i + 2]
                i += 2
                continue
            if cmd[i] in ("--no-deps", "--only-binary=:all:"):
                out.append(cmd[i])
            i += 1
        return out

    def build_args(self, flavour: str, base: str, recorded: dict[str, str] | None = None
                   ) -> dict[str, str]:
        """Build args: recipe.yaml's for the flavour (BASE_IMAGE replaced by `base` for cpu),
        KIT_VERSION, and each download's sha256 arg: the recipe's, else the one recorded on the
        first build (`recorded`: sha256 arg -> sum, from the lock)."""
        declared = self.args
        spec = self.flavour(flavour)
        if spec is None:
            out = {k: v for k, v in (("BASE_IMAGE", base), ("FLAVOUR", flavour)) if k in declared}
        else:
            out = {k: str(v) for k, v in (spec.get("build_args") or {}).items()}
            if flavour == "cpu":
                out["BASE_IMAGE"] = base
            for d in self.downloads(flavour):
                arg, want = d.get("sha256_arg"), d.get("sha256") or (recorded or {}).get(
                    d.get("sha256_arg") or "")
                if arg and want:
                    out[arg] = want
        if "KIT_VERSION" in declared:
            from reprokit import __version__
            out["KIT_VERSION"] = __version__
        return out

    def base_for(self, flavour: str, base: str) -> str:
        """The image the flavour is built FROM. cpu: `base`, unless `base` is the default local base
        and the recipe's cpu flavour names another local base (reprokit/base:bullseye: Debian 11's
        Python 3.9, on which the real framework installs)."""
        if flavour == "cpu":
            own = str(((self.flavour("cpu") or {}).get("build_args") or {}).get("BASE_IMAGE") or "")
            return own if own.startswith(f"{REPOSITORY}/base:") and base == BASE_IMAGE else base
        spec = self.flavour(flavour)
        if spec is None:
            raise UserError(f"images/{self.image_dir} has no recipe.yaml: only its cpu flavour can "
                            "be built")
        return str((spec.get("build_args") or {}).get("BASE_IMAGE") or self.args.get("BASE_IMAGE"))

    def downloads(self, flavour: str) -> list[dict]:
        """recipe.yaml's downloads of the flavour and the keys of the NVIDIA apt repositories its
        Dockerfile adds (reprokit/containers/recipes.py); each with url_arg, sha256_arg, sha256 and source."""
        params = self.params
        if params is None or self.flavour(flavour) is None:
            return []
        return recipes.downloads(params, flavour, recipes.load_distros(self.path.parent))

    def shared_files(self) -> list[Path]:
        """Files the Dockerfile COPYs that are not in images/<dir>/ but in the shared building
        blocks (images/_blocks/, e.g. fetch_sha256.sh): the build copies them into the context."""
        shared = recipes.blocks(self.path.parent)
        out = []
        for src in dockerfile_copies(self.dockerfile):
            if "$" in src or "*" in src or (self.path / src.rstrip("/")).exists():
                continue
            if (shared / src).is_file():
                out.append(shared / src)
        return out


def recipe(image_dir: str, root: Path | None = None) -> Recipe:
    path = (root or IMAGES) / image_dir
    if not (path / "Dockerfile").is_file():
        raise UserError(f"no recipe images/{image_dir}/Dockerfile; see images/ for the recipes")
    return Recipe(image_dir, path)


def image_dirs(suite: str | None, stacks: list[str] | None, dirs: list[str] | None) -> list[str]:
    """The image dirs a suite's stacks, these stacks (stacks.yaml `image`) or these dirs name, in
    first-use order, without repeats; a UserError naming an unknown one."""
    from reprokit.catalog import suites

    all_stacks = suites.load_stacks()
    if dirs:
        known = sorted(p.parent.name for p in IMAGES.glob("*/Dockerfile"))
        for d in dirs:
            if d not in known:
                raise UserError(f"unknown image dir '{d}' (no images/{d}/Dockerfile); known: "
                                f"{', '.join(known)}")
        return list(dict.fromkeys(dirs))
    if suite:
        stacks = [c.stack for c in suites.load_suite(suite).cells]
    for s in stacks or []:
        if s not in all_stacks:
            raise UserError(f"unknown stack '{s}'; known: {', '.join(sorted(all_stacks))}")
    return list(dict.fromkeys(all_stacks[s]["image"] for s in stacks or []))


def python_for_base(base: str) -> tuple[str, int]:
    """(python version, glibc minor) of a local base image (images/_blocks/distros.yaml: by its name,
    else by the Debian release its name holds, else the default base)."""
    distros = recipes.load_distros()
    entry = distros.get(base) or next((d for d in distros.values() if d.get("glibc")
                                       and d["codename"] in base), distros[BASE_IMAGE])
    if not entry.get("glibc"):
        raise UserError(f"images/_blocks/distros.yaml gives no glibc for {base}; add it (the image's "
                        "libc6 version, from dpkg-query -W libc6 in the image) or name --platform flags")
    return entry["python"], int(entry["glibc"].split(".")[1])


# -- the lock file -------------------------------------------------------------------------------
def load_lock(path: Path | None = None) -> dict:
    p = lock_path(path)
    if not p.exists():
        return {"schema_version": formats.version("image_lock"), "kind": "image_lock", "images": {}}
    try:
        doc = json.loads(p.read_text())
    except (OSError, json.JSONDecodeError) as e:
        raise UserError(f"{p} is unreadable ({e}); remove it and rebuild") from e
    doc = formats.upgrade("image_lock", doc, str(p))
    errs = validate.errors("image_lock", doc)
    if errs:
        raise UserError(f"{p} is not a valid image lock ({errs[0]}); remove it and run "
                        "`reproduce.py build` again")
    return doc


def update_lock(entries: dict[str, dict], path: Path | None = None, partial: bool = False) -> Path:
    """Merge entries (key -> entry) into the lock file, atomically: built images, or with `partial`
    flavours built only in part. A built image's key leaves `partial`."""
    p = lock_path(path)
    doc = load_lock(p)
    doc["schema_version"] = formats.version("image_lock")
    part = doc.get("partial") or {}
    if partial:
        part.update(entries)
    else:
        doc["images"].update(entries)
        doc["images"] = dict(sorted(doc["images"].items()))
        part = {k: v for k, v in part.items() if k not in entries}
    if part:
        doc["partial"] = dict(sorted(part.items()))
    else:
        doc.pop("partial", None)
    validate.check("image_lock", doc, f"the image lock being written to {p}")
    files.write_text_atomic(p, json.dumps(doc, indent=1) + "\n")
    return p


# -- finding a built image -----------------------------------------------------------------------
@dataclass
class Found:
    image_id: str
    tag: str
    digest: str | None
    user: str | None
    lock_status: str  # "matches lock" / "no lock entry" / ...


def get_image(client, ref: str):
    import docker

    try:
        return client.images.get(ref)
    except docker.errors.ImageNotFound:
        return None


def find_image(client, image_dir: str, flavour: str, path: Path | None = None) -> Found | None:
    """The built image of image_dir/flavour on the engine: the lock's exact tag when present and
    its ID matches the lock; else the alias tag (lock status says so); else None."""
    entry = load_lock(path)["images"].get(lock_key(image_dir, flavour))
    img, tag, status = None, None, "no lock entry"
    if entry:
        img = get_image(client, entry["tag"])
        tag = entry["tag"]
        if img is not None and img.id != entry["image_id"]:
            raise UserError(f"{entry['tag']} on the engine is {img.id[:19]} but {lock_path(path)} "
                            f"says {entry['image_id'][:19]}; rebuild (`reproduce.py build --image "
                            f"{image_dir}`) or restore the image")
        status = "matches lock" if img is not None else "lock entry's tag not on the engine"
    if img is None:
        tag = alias_tag(image_dir, flavour)
        img = get_image(client, tag)
        if img is None:
            return None
        if entry and img.id == entry["image_id"]:
            status = "matches lock"
    digests = img.attrs.get("RepoDigests") or []
    return Found(img.id, tag, digests[0] if digests else None,
                 (img.attrs.get("Config") or {}).get("User"), status)


# -- the presence probe --------------------------------------------------------------------------
def presence(image_dirs: Iterable[str], flavour: str, client=None) -> dict[str, Found | None]:
    """Each image dir's built image of the flavour on the engine (find_image), None when it is not
    built or is not the one the lock names. Without `client`, engine.client()'s."""
    if client is None:
        from reprokit.containers import engine

        client = engine.client()
    out: dict[str, Found | None] = {}
    for d in dict.fromkeys(image_dirs):
        try:
            out[d] = find_image(client, d, flavour)
        except UserError:  # the engine's image is not the locked one: not usable as it is
            out[d] = None
    return out


def image_states(image_dirs: Iterable[str], flavour: str) -> dict[str, dict | str]:
    """What preflight needs to know of the images: alias tag -> {"present": True, "image_id"} or
    "buildable"; {} when no engine answers."""
    from reprokit.containers import engine

    if not engine.answers()[0]:
        return {}
    return {alias_tag(d, flavour): ({"present": True, "image_id": found.image_id} if found
                                    else "buildable")
            for d, found in presence(image_dirs, flavour).items()}

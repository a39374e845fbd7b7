"""Containers: the stacks' images and everything that makes, keeps and moves them.

- engine.py     the one Docker client factory (every call's timeout) and "does an engine answer?"
- images.py     the image store: recipes' build inputs, tags, the lock file, finding a built image
- recipes.py    Dockerfiles generated from images/<dir>/recipe.yaml (the one validated reader of it)
- build.py      the build engine: context, wheelhouse, docker build, lock entry
- wheelhouse.py the wheelhouse check: every pin resolves for the image's target interpreter
- archive.py    a suite's images in one verified file, and loading it back
- compose.py    compose/<suite>.yml from the one container spec (reprokit/runners/container.py)

What a cell's container is (image, mounts, user, isolation, GPUs) is reprokit/runners/container.py:
the runners start containers, this package provides the images they start.
"""

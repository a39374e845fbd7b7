"""Containers: the stacks' images and everything that makes, keeps and moves them.

- engine.py     the one Docker client factory (every call's timeout) and "does an engine answer?"
- images.py     the image store: recipes' build inputs, tags, the lock file, finding a built image
- recipes.py    Dockerfiles generated from images/<dir>/recipe.yaml (the one validated reader of it)
- build.py      the build engine: context, wheelhouse, docker build, lock entry
- wheelhouse.py the wheelhouse check: every pin resolves for the image's target interpreter
- archive.py    a suite's images in one verified file, and loading it back
- spec.py       what a cell's container is (image, mounts, user, isolation, GPUs), and its renderings
- compose.py    compose/<suite>.yml from that one container spec

This package imports no runner: the runners (reprokit/runners/) start the containers spec.py
describes, on the images this package provides. The engine's reaper tells a dead driver from a live
one by reprokit/probes/processes.py, which starts nothing.
"""

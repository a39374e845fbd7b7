"""Kept only for reprokit/preflight.py, which imports `images.find_image` for its Docker image probe;
the image store is reprokit/containers/images.py (its `image_states` is that probe whole). Remove this
module when preflight calls `reprokit.containers.images.image_states` instead."""

from reprokit.containers.images import find_image

__all__ = ["find_image"]

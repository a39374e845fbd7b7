"""Containers: image recipes, builds, the wheelhouse, compose, the engine and reaper."""

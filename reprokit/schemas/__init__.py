"""JSON Schemas of every file format (<name>.schema.json), read by reprokit/validate.py."""

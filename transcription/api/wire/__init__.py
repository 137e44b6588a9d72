"""The wire shapes: serializers, strict fields, response bodies, error bodies."""

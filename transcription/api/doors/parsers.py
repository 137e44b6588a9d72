"""The API's one parser: DRF's JSON parser, but a body nested too deeply for Python's JSON
decoder (a few KB of brackets are enough) is a malformed body, not a RecursionError."""

from rest_framework import exceptions, parsers


class JSONParser(parsers.JSONParser):
    def parse(self, stream, media_type=None, parser_context=None):
        try:
            return super().parse(stream, media_type, parser_context)
        except RecursionError:
            raise exceptions.ParseError("the JSON is nested too deeply.") from None

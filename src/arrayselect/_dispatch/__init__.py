"""Dispatch: which backend serves a call (found by name, lazily), and the decisions kept
per call signature, with their compiled hit path (``_fastcall.c``) and its Python twin."""

"""The shipped tools, above the library: the runtime report (``show_runtime``), the
self-check and the benchmark (``python -m arrayselect``)."""

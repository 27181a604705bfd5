"""Built-in backends of :mod:`arrayselect`; each module is imported on first use."""

"""The bottom layer: the errors, the version, the user settings, the cache type and the
import hook. It imports nothing else of arrayselect."""

"""asv benchmarks of arrayselect."""

"""The operations: ``select``, ``where``, ``select_n``, ``select_cases`` and
``apply_where``, each a front end over validation and the decision caches, and the
family's generic algorithms that a backend without its own uses."""

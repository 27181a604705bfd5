"""The rules: the shape rules of the four broadcasting modes, the backend interface with
its dtype kinds, and NumPy's dtypes. Pure functions of shapes and dtypes; they import
only :mod:`arrayselect._base`."""

"""Validation: the checks every operation makes on its operands (libraries, devices,
dtype kinds, Python scalars, ``out``), in the documented order, and the decision they
return. They import only the layers below: :mod:`arrayselect._rules` and
:mod:`arrayselect._base`."""

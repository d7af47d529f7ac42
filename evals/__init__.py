"""The model evaluation of ``make eval`` (issue 35): a real model in the loop, outside ``make test``."""

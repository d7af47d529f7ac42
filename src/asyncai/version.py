"""asyncai's version, in one place: the package's metadata takes it from here (pyproject.toml's
``dynamic`` version), and ``asyncai --version`` prints it."""

__version__ = "0.1.0"

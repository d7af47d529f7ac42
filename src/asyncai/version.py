"""asyncai's version, in one place (pyproject.toml's ``version`` says the same; a test checks)."""

__version__ = "0.1.0"

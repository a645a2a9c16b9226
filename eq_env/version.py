"""The package's version: a leaf module, so that the core can name it without importing the package root."""

__version__ = "0.1.0"

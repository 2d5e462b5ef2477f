"""Maintainer tools and evaluation harnesses; run each from the repository root as
``python -m scripts.<name>`` (they are not part of the installed package)."""

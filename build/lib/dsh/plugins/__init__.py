"""Leaf capabilities of dsh, one package each."""

"""Policies that decide what optisched may do to running pods (who may be evicted or moved)."""

"""Prefect flows that sequence qgen library calls."""

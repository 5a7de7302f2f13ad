"""Isolated workers: where solutions are imported and run, never in the controller."""

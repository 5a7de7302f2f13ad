"""Modules both sides of the trust boundary share: tensor helpers, timing, messages."""

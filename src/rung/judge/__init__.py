"""The judge: inputs from a seed it never shares, the reference, the comparison, the verdict."""

"""The solution process: imports one solution and calls it when the judge asks, nothing else."""

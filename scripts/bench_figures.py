"""Reading what the benchmark scripts write, shared by the report generators."""


def read_figures(path):
    """The `name value` lines a benchmark script writes (target/bench-data/*.txt), as
    {name: value}."""
    figures = {}
    with open(path) as f:
        for line in f:
            key, value = line.split()
            figures[key] = float(value)
    return figures

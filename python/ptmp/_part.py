"""One process of a graph run by ``ptmp.run_graph`` (``python -m ptmp._part PLAN``)."""

import sys

from ._ptmp import _graph_part

if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: python -m ptmp._part PLAN")
    sys.exit(_graph_part(sys.argv[1]))

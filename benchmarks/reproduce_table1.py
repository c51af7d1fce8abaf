"""PG² paper, Table 1 (exact PG² against Monte Carlo and quasi-Monte Carlo): now the tables
``pg2-table1`` and ``pg2-precision`` of ``benchmarks/reproduce.py`` (protocol in
``benchmarks/reproductions/pg2.py``). This wrapper runs those two.

Run: python benchmarks/reproduce_table1.py [--quick] [--out DIR]
"""
import sys

from reproduce import main

if __name__ == "__main__":
    sys.exit(main(["pg2-table1", "pg2-precision", *sys.argv[1:]]))

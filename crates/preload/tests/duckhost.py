#!/usr/bin/env python3
"""One "host" of the two-host DuckDB test (nlm.sh), run under `dnfs run`
with a shadow directory of its own.

    duckhost.py hold DB   open DB read-write, add a row, say "held", keep
                          it open until standard input ends, then close it
                          and say "closed"
    duckhost.py try DB    open DB read-write: "opened N" (N rows) or
                          "refused: " and DuckDB's error
"""
import sys

import duckdb


def main(what, db):
    if what == "hold":
        con = duckdb.connect(db)
        con.execute("CREATE TABLE IF NOT EXISTS t(x INTEGER)")
        con.execute("INSERT INTO t VALUES (1)")
        print("held", flush=True)
        sys.stdin.read()
        con.close()
        print("closed", flush=True)
    elif what == "try":
        try:
            con = duckdb.connect(db)
        except duckdb.Error as e:
            print("refused: " + str(e).splitlines()[0], flush=True)
            return
        con.execute("CREATE TABLE IF NOT EXISTS t(x INTEGER)")
        con.execute("INSERT INTO t VALUES (2)")
        n = con.execute("SELECT count(*) FROM t").fetchone()[0]
        con.close()
        print(f"opened {n}", flush=True)
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    main(sys.argv[1], sys.argv[2])

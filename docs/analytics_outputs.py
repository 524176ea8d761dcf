"""The outputs in docs/analytics.md, from DuckDB (Python package `duckdb`).

    python3 docs/analytics_outputs.py TABLES [--check]

TABLES: a folder `pi-session export-parquet --agent-dir corpus/demo --out TABLES` wrote.
Runs the document's setup block (the first ```sql block), then each further ```sql
block, and puts its result, as a Markdown table, in place of the table that follows it.
With --check, changes nothing and exits 1 when a table differs (tests/it/analytics.rs).
"""
import os
import re
import sys

import duckdb

doc_path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "analytics.md")
tables, check = sys.argv[1], "--check" in sys.argv[2:]
doc = open(doc_path, encoding="utf-8").read()
blocks = list(re.finditer(r"```sql\n(.*?)```\n", doc, re.S))
con = duckdb.connect()
os.chdir(os.path.dirname(os.path.abspath(tables)))
folder = os.path.basename(os.path.abspath(tables))


def sql(text):
    # The document names the folder `tables`.
    return text.replace("'tables/", f"'{folder}/")


for stmt in sql(blocks[0].group(1)).split(";"):
    if stmt.strip():
        con.execute(stmt)


def render(query):
    r = con.sql(sql(query))
    out = ["| " + " | ".join(r.columns) + " |", "|" + "|".join(["---"] * len(r.columns)) + "|"]
    for row in r.fetchall():
        out.append("| " + " | ".join("" if v is None else str(v).replace("|", "\\|") for v in row) + " |")
    return "\n".join(out) + "\n"


pieces, at, differ = [], 0, []
for b in blocks[1:]:
    table = re.compile(r"\n((?:\|.*\n)+)").match(doc, b.end())
    if not table:
        sys.exit(f"no table after the block ending at {b.end()}")
    want = render(b.group(1))
    if table.group(1) != want:
        differ.append(b.group(1).splitlines()[0])
    pieces += [doc[at : table.start(1)], want]
    at = table.end(1)
pieces.append(doc[at:])
if check:
    if differ:
        sys.exit("docs/analytics.md: outputs differ for: " + "; ".join(differ))
else:
    open(doc_path, "w", encoding="utf-8").write("".join(pieces))

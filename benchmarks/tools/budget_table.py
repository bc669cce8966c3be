"""budget_table.py — turn the budgets blocks of saved benchmark outputs into the Markdown table the docs carry.

    python benchmarks/bench_handler.py > out/handler.txt      # ... one file per script
    python benchmarks/tools/budget_table.py out/*.txt          # prints | budget | figure | verdict | machine | date |

Each output starts with the machine report (_common.print_header) and ends with the budgets block
(_common.report); this reads both, so the table in benchmarks/README.md and docs/performance.md is copied from
what the scripts printed, not typed by hand.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

LINE = re.compile(r"^(PASS|MISS|SKIP)  (.+): (.+) \(budget ≤ (.+)\)$")


def machine(text: str) -> tuple[str, str]:
    """('2 CPUs, AMD EPYC, load 10.7', '2026-12-07') from the header of one output."""
    cpus = re.search(r"^machine : (\d+) CPUs \(nproc\), ([^,]+)", text, re.MULTILINE)
    load = re.search(r"^load    : ([\d.]+)", text, re.MULTILINE)
    date = re.search(r"^# run at (\d{4}-\d\d-\d\d)", text, re.MULTILINE)
    described = f"{cpus.group(1)} cores, {cpus.group(2)}" if cpus else "?"
    if load:
        described += f", load {load.group(1)}"
    return described, date.group(1) if date else "?"


def rows(path: Path) -> list[str]:
    text = path.read_text(encoding="utf-8", errors="replace")
    described, date = machine(text)
    block = text[text.find("## budgets"):] if "## budgets" in text else ""
    found = []
    for line in block.splitlines():
        match = LINE.match(line)
        if match:
            verdict, name, figure, limit = match.groups()
            found.append(f"| {name} | ≤ {limit} | {figure} | {verdict} | `{path.stem}` | {described} | {date} |")
    return found


def main(paths: list[str]) -> int:
    print("| budget | limit | figure | verdict | script | machine | date |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for name in paths:
        for row in rows(Path(name)):
            print(row)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

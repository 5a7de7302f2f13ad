"""compute-sanitizer's memcheck report, read as text: how many errors, and the first access named.

The tool writes its report with `--log-file` into a folder of the judge's, so nothing the solution
prints is in it; every line of the tool's starts with `=========`. An error is a line at the
left margin ("Invalid __global__ read of size 4 bytes", "Program hit cudaErrorIllegalAddress
...") followed by indented lines that say where ("at add_kernel+0x1b0", "by thread (16,0,0) in
block (0,0,0)", "Access to 0x7f... is out of bounds" or, in older versions, "Address 0x7f... is
out of bounds", "and is 60 bytes after the nearest allocation at 0x7f... of size 4 bytes"); the
report ends with "ERROR SUMMARY: N errors".

A kernel's name is the solution's text (a CUDA C++ symbol can hold any byte but NUL): every field
kept is cut to MAX_FIELD_CHARS with unprintable characters replaced, and the count is the last
summary line (the tool prints it after every record, so a name that forges one comes before it)
and never fewer than the records seen.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field
from typing import Any

PREFIX = "========="
MAX_FIELD_CHARS = 200
RECORDS_KEPT = 5
SUMMARY = re.compile(r"^ERROR SUMMARY: ([\d,]+) errors?$")  # not "... errors were not printed"
# Lines at the left margin that are the tool's own, not an error it found.
NOT_FOUND_ERRORS = ("COMPUTE-SANITIZER", "ERROR SUMMARY", "LEAK SUMMARY", "Target application returned")
# The tool's own trouble ("Error: Device not supported", "Warning: ..."), not the solution's.
TOOL_SAID = ("Error:", "Warning:", "Internal Sanitizer Error")


@dataclass
class Access:
    """One error as the tool printed it: what (`kind`), where in which kernel (`at`), by which
    thread, and the address with the nearest allocation."""

    kind: str
    at: str = ""
    thread: str = ""
    address: str = ""
    nearest: str = ""

    def line(self) -> str:
        where = " ".join(p for p in (self.at and f"at {self.at}", self.thread) if p)
        said = "; ".join(p for p in (self.address, self.nearest) if p)
        return ", ".join(p for p in (self.kind, where, said) if p)


@dataclass
class Report:
    errors: int | None  # the tool's count; None where it wrote no summary
    accesses: list[Access] = field(default_factory=list)  # the first RECORDS_KEPT
    records: int = 0  # every record seen
    tool_notes: list[str] = field(default_factory=list)

    def figures(self) -> dict[str, Any]:
        return {
            "errors": self.errors,
            "records": self.records,
            "accesses": [asdict(a) for a in self.accesses],
            "tool_notes": self.tool_notes[:RECORDS_KEPT],
        }


def clean(text: str, limit: int = MAX_FIELD_CHARS) -> str:
    """`text` with unprintable characters as `?`, cut to `limit` characters (marked)."""
    shown = "".join(c if c.isprintable() else "?" for c in text.strip())
    return shown if len(shown) <= limit else shown[: limit - 3] + "..."


def parse(text: str) -> Report:
    """The report in `text` (the tool's log file, already read within its cap)."""
    summary: int | None = None
    accesses: list[Access] = []
    records = 0
    tool_notes: list[str] = []
    current: Access | None = None
    for raw in text.split("\n"):  # the file's lines only: splitlines would also break at \x85, \u2028
        raw = raw.removesuffix("\r")
        if not raw.startswith(PREFIX):
            continue
        body = raw[len(PREFIX) :]
        said = body.strip()
        if not said:
            current = None
            continue
        if len(body) - len(body.lstrip()) > 1:  # indented: a detail of the record above
            if current is not None:
                _detail(current, said)
            continue
        current = None
        found = SUMMARY.match(said)
        if found:
            summary = int(found.group(1).replace(",", ""))
        elif said.startswith(TOOL_SAID):
            tool_notes.append(clean(said))
        elif not said.startswith(NOT_FOUND_ERRORS):
            records += 1
            if len(accesses) < RECORDS_KEPT:
                current = Access(clean(said))
                accesses.append(current)
    errors = None if summary is None else max(summary, records)
    return Report(errors, accesses, records, tool_notes)


def _detail(access: Access, said: str) -> None:
    """The first of each kind of detail line is kept; host and device frames are not."""
    if said.startswith("at ") and not access.at:
        access.at = clean(said[3:])
    elif said.startswith("by thread") and not access.thread:
        access.thread = clean(said)
    elif said.startswith(("Address", "Access")) and not access.address:
        access.address = clean(said)
    elif said.startswith("and is") and not access.nearest:
        access.nearest = clean(said)

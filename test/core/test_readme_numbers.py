"""Every number in the results tables of the README and of ``docs/results/`` is in the committed JSON that the
table names.

How a table names its JSON: paths in code spans (``bench_results/x.json``, ``results/y.json``, globs
``parity_go2_*.json``, ``a[_run5]b.json`` for both ``ab.json`` and ``a_run5b.json``, folders
``bench_results/demo_go2_foam/``) in the paragraph just before the table or just after it; only if those
name none, in the section heading. Bare file names are looked up in ``bench_results/``,
``checkpoints/results/`` and ``checkpoints/`` (and in the folders the same text names). A results table
that names no JSON, or names one that is not committed, fails.

How a number matches: a value in those files (numbers anywhere in them, and numbers written inside
their strings, e.g. ``"models": "8,9,10"``) that rounds to the number at the precision it is written
with (``6.20`` matches 6.195 to 6.205, ``1,290`` matches 1289.5 to 1290.5). Written with ``%``: the
value or 100x the value (a fraction). ``0.77 M``: the value in millions. GiB: a value in MiB / 1024.
``−`` is a minus sign. Ratios (``1.52×``), intervals (``[1.20, 1.91]``), ``a / b`` and ``a → b → c``
are checked number by number. All numbers of one row must be in one file (the one holding most of
them), so a run's row cannot borrow a match from another run's file. Lists of raw data (``RAW_KEYS``,
and any list longer than ``MAX_LIST``: per-episode results, per-second series) are not searched.

Not checked, by explicit rule, never silently: the header row and the first column of every table
(they name the columns and the rows: task, configuration, run number); digits glued to letters
(``v8``, ``H200``, ``go2``: names, not figures); columns in ``SKIP_COLUMNS`` (limits that are
configuration); README tables outside ``CHECKED_SECTIONS`` (status, threat model and test tables: they restate
results checked here or hold none); and tables in ``UNBACKED_TABLES``, each with the reason it has no
JSON. A side-by-side table (an empty header cell between two tables) is checked as two tables.
"""

from __future__ import annotations

import copy
import json
import re
from dataclasses import dataclass, field
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
RESULTS_DOCS = sorted((ROOT / "docs" / "results").glob("*.md"))
"""The full results, one document per topic: every table in them is a results table."""
JSON_DIRS = ("", "bench_results", "checkpoints/results", "checkpoints")
"""Where a JSON path written in the README is looked up, in order (relative to the repository root)."""

CHECKED_SECTIONS = ("## Two commands on a fresh machine", "## Results")
"""Top-level README sections whose tables are results. Elsewhere: status, threat model and test tables,
which restate results checked here or hold none."""

SKIP_COLUMNS = {"bound": "a node's memory bound is configuration (its docstring), not a measurement",
                "paper, real robot: SimDist / RLPD / IQL": "the paper's published numbers, quoted beside ours"}
"""Column header -> why its numbers are not results."""

UNBACKED_TABLES = {
    "| Go2 pretrain mixture | transitions/s/core | ratio |":
        "a one-off side-by-side measurement of physics settings (30 s runs, described in the text); "
        "not a committed benchmark",
}
"""First line of a results table -> why it has no JSON (each one is reported, none is skipped silently)."""

MAX_LIST = 12
"""Lists longer than this (per-episode results, per-second series) are not searched: a table reports their
summaries, and thousands of raw values would let almost any number match by chance."""

RAW_KEYS = frozenset({"per_episode", "rows", "series", "series_mib", "t_s", "rss", "hwm", "root_rss", "samples",
                      "episode_metric", "episode_fell", "episode_duration_s", "episode_metric_per_seed",
                      "episode_fell_per_seed", "episode_duration_s_per_seed"})
"""Keys of raw data (one value per episode, second or sample) that tables summarise and never quote."""

NUMBER = re.compile(r"(?<![\w.])[-−]?\d[\d,]*(?:\.\d+)?")
CODE_SPAN = re.compile(r"`([^`]+)`")
PATH = re.compile(r"(?<![\w.*/-])[\w.*\[\]/-]+(?:\.json|/)(?![\w.*/-])")


@dataclass
class Table:
    """One markdown table of the README and what it names."""

    line: int
    """1-based line of its header row."""
    section: str
    """The ``## `` section it is in."""
    rows: list[list[str]]
    """Cells of each row, header first (the separator row dropped)."""
    refs: list[str] = field(default_factory=list)
    """JSON paths, globs and folders named in its heading and in the paragraphs just before and after it."""
    doc: str = "README.md"
    """The document it is in, relative to the repository root."""


def json_refs(text: str) -> list[str]:
    """Paths ending in ``.json`` or ``/`` inside the code spans of ``text``; ``a[_b]c.json`` gives both forms."""
    out = []
    for span in CODE_SPAN.findall(text):
        for path in PATH.findall(span):
            optional = re.search(r"\[([^\]]*)\]", path)
            out += ([path] if optional is None else
                    [path.replace(optional.group(0), ""), path.replace(optional.group(0), optional.group(1))])
    return out


def parse_tables(text: str, doc: str = "README.md") -> list[Table]:
    """Pipe tables of a markdown text (possibly indented in a list item) from ``doc``, with their JSON references."""
    lines = [line.strip() for line in text.splitlines()]
    tables: list[Table] = []
    section, heading, paragraph, last = "", "", [], []
    i = 0
    while i < len(lines):
        if lines[i].startswith("#"):
            section = lines[i] if lines[i].startswith("## ") else section
            heading, paragraph, last = lines[i], [], []
        elif lines[i].startswith("|") and i + 1 < len(lines) and re.fullmatch(r"\|[-| :]+\|", lines[i + 1]):
            start, rows = i, []
            while i < len(lines) and lines[i].startswith("|"):
                if i != start + 1:
                    rows.append([c.strip() for c in lines[i].strip("|").split("|")])
                i += 1
            after = []
            for line in lines[i + 1 if i < len(lines) and not lines[i] else i:]:
                if not line or line.startswith(("#", "|")):
                    break
                after.append(line)
            near = json_refs(" ".join((paragraph or last) + ["|"] + after))
            tables.append(Table(line=start + 1, section=section, rows=rows, refs=near or json_refs(heading),
                                doc=doc))
            paragraph, last = [], []
            continue
        elif not lines[i]:
            paragraph, last = [], paragraph or last
        else:
            paragraph.append(lines[i])
        i += 1
    return tables


def resolve(ref: str, folders: list[Path] = ()) -> list[Path]:
    """The JSON files a README reference stands for (empty if none exists).

    Folders and globs stand for every JSON file they hold or match; folders count only inside the
    result folders (``bench_results/``, ``checkpoints/``). A bare file name (``summary.json``) is looked
    up in ``JSON_DIRS`` and then in ``folders`` (the folders the same table names).
    """
    bases = [ROOT / d for d in JSON_DIRS] + ([] if "/" in ref else list(folders))
    for base in bases:
        if ref.endswith("/"):
            folder = (base / ref).resolve()
            inside = any(folder.is_relative_to(ROOT / d) for d in ("bench_results", "checkpoints"))
            if inside and folder.is_dir():
                return sorted(folder.rglob("*.json"))
        else:
            found = sorted(p for p in base.glob(ref) if p.is_file())
            if found:
                return found
    return []


def table_files(table: Table) -> tuple[list[Path], list[str]]:
    """(JSON files the table names, references that resolve to none)."""
    folders = [f for r in table.refs if r.endswith("/") for f in {p.parent for p in resolve(r)}]
    files, missing = [], []
    for ref in table.refs:
        found = resolve(ref, folders)
        files += found
        if not found:
            missing.append(ref)
    return files, missing


def numbers_in(x: object) -> list[float]:
    """Every number in a parsed JSON value, including numbers written inside strings (``RAW_KEYS`` left out)."""
    if isinstance(x, bool):
        return []
    if isinstance(x, int | float):
        return [float(x)]
    if isinstance(x, str):
        return [float(m) for m in re.findall(r"-?\d+(?:\.\d+)?", x)]
    if isinstance(x, dict):
        return [v for k, item in x.items() if k not in RAW_KEYS for v in numbers_in(item)]
    if isinstance(x, list) and len(x) <= MAX_LIST:
        return [v for item in x for v in numbers_in(item)]
    return []


def json_numbers(paths: list[Path]) -> list[float]:
    """Every number in the files (see ``numbers_in``)."""
    return [v for path in paths for v in numbers_in(json.loads(path.read_text()))]


@dataclass(frozen=True)
class Token:
    """A number as written in a table cell."""

    text: str
    value: float
    decimals: int
    unit: str
    """What follows it: ``%``, ``M``, ``GiB`` or ``""``."""


def tokens(cell: str) -> list[Token]:
    """Numbers of a cell (markdown emphasis removed)."""
    cell = cell.replace("**", "").replace("`", "")
    out = []
    for m in NUMBER.finditer(cell):
        raw = m.group(0)
        num = raw.replace(",", "").replace("−", "-")
        after = cell[m.end():].lstrip()
        unit = next((u for u in ("%", "GiB", "M ") if (after + " ").startswith(u)), "").strip()
        out.append(Token(raw, float(num), len(num.split(".")[1]) if "." in num else 0, unit))
    return out


def matches(token: Token, values: list[float]) -> bool:
    """Whether a JSON value, in the token's unit, rounds to the token at its precision."""
    tol = 0.5 * 10.0 ** -token.decimals + 1e-9
    scales = {"%": (1.0, 100.0), "M": (1e-6,), "GiB": (1 / 1024,)}.get(token.unit, (1.0,))
    return any(abs(v * s - token.value) <= tol for v in values for s in scales)


def checked_tables() -> list[Table]:
    """The results tables of the README (``CHECKED_SECTIONS``) and of ``RESULTS_DOCS``, ``UNBACKED_TABLES`` left
    out."""
    tables = [t for t in parse_tables(README.read_text()) if t.section.startswith(CHECKED_SECTIONS)]
    for doc in RESULTS_DOCS:
        tables += parse_tables(doc.read_text(), str(doc.relative_to(ROOT)))
    return [t for t in tables if "| " + " | ".join(t.rows[0]) + " |" not in UNBACKED_TABLES]


def row_groups(table: Table) -> list[list[int]]:
    """Column indices of each side-by-side sub-table (split at empty header cells), first columns dropped."""
    groups, current = [], []
    for j, head in enumerate(table.rows[0]):
        if not head and j:  # an empty header cell (not the first) separates two tables drawn side by side
            groups.append(current)
            current = []
        elif head.replace("**", "") not in SKIP_COLUMNS:
            current.append(j)
    groups.append(current)
    return [g[1:] for g in groups if len(g) > 1]  # each sub-table's first column names its rows


def mismatches(table: Table) -> list[str]:
    """Numbers of ``table`` not in its JSON, as ``'row' / 'column': number`` lines.

    One row (of each side-by-side sub-table) is one result: its numbers must all be in one of the named
    files, the one that holds most of them, so a number cannot borrow a match from another run's file.
    """
    candidates = [json_numbers([path]) for path in table_files(table)[0]]
    bad = []
    for row in table.rows[1:]:
        for group in row_groups(table):
            found = [(j, t) for j in group if j < len(row) for t in tokens(row[j])]
            if not found:
                continue
            best = max(candidates, key=lambda vals: sum(matches(t, vals) for _, t in found), default=[])
            bad += [f"{row[group[0] - 1]!r} / {table.rows[0][j]!r}: {t.text}{t.unit}" for j, t in found
                    if not matches(t, best)]
    return bad


TABLES = checked_tables()


def test_every_results_table_is_found_and_every_unbacked_one_is_still_there():
    assert RESULTS_DOCS, "docs/results/ holds no results document"
    assert sum(t.doc == "README.md" for t in TABLES) >= 3, "the README's Results section lost its headline tables"
    assert len(TABLES) >= 70, f"only {len(TABLES)} results tables parsed from README.md and docs/results/"
    firsts = {"| " + " | ".join(t.rows[0]) + " |"
              for doc in (README, *RESULTS_DOCS) for t in parse_tables(doc.read_text())}
    assert set(UNBACKED_TABLES) <= firsts, "an UNBACKED_TABLES entry no longer matches a README table: remove it"


@pytest.mark.parametrize("table", TABLES, ids=[f"{t.doc}:{t.line}" for t in TABLES])
def test_table_names_committed_json(table):
    files, missing = table_files(table)
    assert table.refs, f"{table.doc}:{table.line}: the table names no JSON; write its file beside it"
    assert not missing, f"{table.doc}:{table.line}: named JSON not in the repository: {missing}"
    assert files


@pytest.mark.parametrize("table", TABLES, ids=[f"{t.doc}:{t.line}" for t in TABLES])
def test_table_numbers_are_in_its_json(table):
    bad = mismatches(table)
    assert not bad, (f"{table.doc}:{table.line}: {len(bad)} number(s) not in {table.refs} at the written "
                     "precision:\n  " + "\n  ".join(bad))


def test_the_matching_rules():
    """Hand-written cases: rounding at the written precision, percentages, minus signs, thousands."""
    assert [t.value for t in tokens("**1.52** [1.20, 1.91]")] == [1.52, 1.20, 1.91]
    assert [(t.value, t.unit) for t in tokens("99.97 % / 12.1 ms")] == [(99.97, "%"), (12.1, "")]
    assert [t.value for t in tokens("−0.21 → −0.55")] == [-0.21, -0.55]
    assert [t.value for t in tokens("1,290")] == [1290.0] and tokens("v8–v10") == []
    six = tokens("6.20")[0]
    assert matches(six, [6.1953]) and matches(six, [6.2049]) and not matches(six, [6.2051])
    assert matches(tokens("98.5 %")[0], [0.9851]) and not matches(tokens("98.5 %")[0], [0.9861])
    assert matches(tokens("0.77 M params")[0], [771_234]) and matches(tokens("1.9 GiB")[0], [1946.0])


def test_a_wrong_number_fails():
    """A number one unit off in its last digit is caught (the parity table's in-process mean on flat)."""
    table = copy.deepcopy(next(t for t in TABLES if t.rows[0][0] == "task" and t.rows[1][0] == "go2/flat"))
    assert not mismatches(table)
    table.rows[1][1] = table.rows[1][1].replace("6.20", "6.30", 1)
    assert mismatches(table) == ["'go2/flat' / 'in-process: m per episode, falls': 6.30"]

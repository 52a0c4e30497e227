"""``agentcache lint`` on real agent code: precision, recall, speed and memory on labelled corpora (issue 15).

Run: ``python bench/lint_real.py [--corpus NAME] [--cache DIR]``. Each corpus (``lint_corpus_NAME.toml``: pinned
sdists of agent frameworks and applications) is fetched with ``pip download`` into the cache (default
``~/.cache/agentcache/lint``) and checked by sha256; every finding is judged in ``lint_labels_NAME.toml`` (TP or
FP, with the reason read from the code), and so are the problems the linter should find and did not (misses).
Corpora: ``tuned``, the one the lint was built against; ``second``, judged first without tuning and kept as a second
labelled corpus; ``third``, first judged against the lint of 2026-12-04; ``fourth``, judged against the lint of
2026-12-05 (commit 6dfa9bb) and tuned to after; ``fifth``, judged against the lint of 2026-12-05 (commit b3fa554) and
tuned to after; ``sixth``, judged against the lint of 2026-12-05 (commit 5faca15) and tuned to after; ``seventh``,
judged against the lint of 2026-12-05 (commit 60b4e2d) and tuned to after; ``eighth``, judged against the lint of
2026-12-05 (commit 0dceb7f); ``ninth``, judged against the lint of 2026-12-05 (commit c6e990f); ``tenth``, judged
against the lint of 2026-12-05 (commit 8fc20ab); ``eleventh``, judged against the lint of 2026-12-05 (commit
9d708ff); ``twelfth``, judged against the lint of 2026-12-05 (commit 08b62b7); ``thirteenth``, judged against the
lint of 2026-12-05 (commit c2e67fd); ``fourteenth``, judged against the lint of 2026-12-06 (commit 68237cb);
``fifteenth``, judged against the lint of 2026-12-06 (commit 9b89718); ``sixteenth``, judged against the lint of
2026-12-06 (commit d8b3a17); ``seventeenth``, judged against the lint of 2026-12-06 (commit 89f2cea);
``eighteenth``, judged against the lint of 2026-12-06 (commit fdf1e97); ``nineteenth``, judged against the lint of
2026-12-06 (commit fdf1e97); ``twentieth``, judged against the lint of 2026-12-06 (commit fe1faad);
``twentyfirst``, judged against the lint of 2026-12-06 (commit e76004b); ``twentysecond``, judged against the lint
of 2026-12-06 (commit c92987c); ``twentythird``, judged against the lint of 2026-12-06 (commit 30aa61f);
``twentyfourth``, judged against the lint of 2026-12-06 (commit 38a7bc3); ``twentyfifth``, judged against the
lint of 2026-12-06 (commit 5b60998); ``twentysixth``, judged against the lint of 2026-12-06 (commit fb494db);
``twentyseventh``, judged against the lint of 2026-12-06 (commit 7a47be4); ``twentyeighth``, judged against the
lint of 2026-12-06 (commit c87b870); ``twentyninth``, judged against the lint of 2026-12-06 (commit 5e4c36d);
``thirtieth``, judged against the lint of 2026-12-06 (commit 6b491db); ``thirtyfirst``, judged against the lint of
2026-12-06 (commit 0effe13); ``thirtysecond``, judged against the lint of 2026-12-06 (commit 6fbee28);
``thirtythird``, judged against the lint of 2026-12-06 (commit 1165960); ``thirtyfourth``, judged against the lint
of 2026-12-06 (commit 5e4eba0); ``thirtyfifth``, judged against the lint of 2026-12-06 (commit 2ef15f8);
``thirtysixth``, judged against the lint of 2026-12-07 (commit e6eabc7); ``thirtyseventh``, judged against the lint of
2026-12-07 (commit 14d3c78); ``thirtyeighth``, judged against the lint of 2026-12-07 (commit 00c01a9);
``thirtyninth``, judged against the lint of 2026-12-07 (commit b2da2aa); ``fortieth``, judged against the lint of
2026-12-07 (commit 82cc0b4); ``fortyfirst``, judged against the lint of 2026-12-07 (commit 7d997c9);
``fortysecond``, judged against the lint of 2026-12-07 (commit 521c0b7); ``fortythird``, judged against the lint
of 2026-12-07 (commit 2dfb1d1); ``fortyfourth``, judged against the lint of 2026-12-07 (commit 82b74de);
``fortyfifth``, judged against the lint of 2026-12-07 (commit 1364638); ``fortysixth``, judged against the lint of
2026-12-07 (commit 1722be3).
Targets, per corpus: precision >= 90%, recall >= 80%, >= 300 files/s, peak RSS < 300 MB on a 4 MB file. Exits 1
when a target is missed or a finding is unlabelled.

Files/s is counted over the files lint checks, twice: on CPU time of one process (``jobs=1``; the machine may be
shared, and wall time then measures the neighbours too), and on wall time with ``jobs=2`` (two worker processes, as
``agentcache lint --jobs 2`` runs), the figure the target is checked on, since the issue sets it for a 2-core
machine. The load average is printed with them: on a busy machine the wall figure is the neighbours' as much as
lint's. The two runs must find the same. Peak RSS is that of a child process linting one 4 MB module made of
corpus code, started before the corpora are linted (a child's peak counts the memory of its parent when forked);
and, with no target, that of a child linting the whole first corpus named: memory a run keeps from one module to the
next (a cache of every module's syntax trees) shows there, not on one module.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import subprocess
import sys
import tarfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import tomllib

from agentcache.lint import Finding, lint_paths

HERE = Path(__file__).resolve().parent
CORPORA = (
    "tuned",
    "second",
    "third",
    "fourth",
    "fifth",
    "sixth",
    "seventh",
    "eighth",
    "ninth",
    "tenth",
    "eleventh",
    "twelfth",
    "thirteenth",
    "fourteenth",
    "fifteenth",
    "sixteenth",
    "seventeenth",
    "eighteenth",
    "nineteenth",
    "twentieth",
    "twentyfirst",
    "twentysecond",
    "twentythird",
    "twentyfourth",
    "twentyfifth",
    "twentysixth",
    "twentyseventh",
    "twentyeighth",
    "twentyninth",
    "thirtieth",
    "thirtyfirst",
    "thirtysecond",
    "thirtythird",
    "thirtyfourth",
    "thirtyfifth",
    "thirtysixth",
    "thirtyseventh",
    "thirtyeighth",
    "thirtyninth",
    "fortieth",
    "fortyfirst",
    "fortysecond",
    "fortythird",
    "fortyfourth",
    "fortyfifth",
    "fortysixth",
)
DEFAULT_CACHE = Path.home() / ".cache" / "agentcache" / "lint"
PRECISION, RECALL, FILES_PER_SECOND, RSS_MB, BIG_FILE_MB = 0.90, 0.80, 300, 300, 4
#: (precision, recall) each corpus must keep, for the tests: the targets on the tuned one; on the others, which miss
#: them, what they reached (docs/benchmarks.md), so that no change makes them worse unnoticed.
FLOORS = {
    "tuned": (PRECISION, RECALL),
    "second": (1.0, 0.73),
    "third": (0.9, 0.8),
    "fourth": (0.95, 0.71),
    "fifth": (0.75, 1.0),
    "sixth": (1.0, 1.0),
    "seventh": (1.0, 1.0),
    "eighth": (0.85, 1.0),
    "ninth": (0.58, 1.0),
    "tenth": (1.0, 0.33),
    "eleventh": (1.0, 0.57),
    "twelfth": (0.9, 0.71),
    "thirteenth": (1.0, 0.5),
    "fourteenth": (1.0, 0.85),
    "fifteenth": (1.0, 1.0),
    "sixteenth": (0.66, 0.66),
    "seventeenth": (0.57, 0.57),
    "eighteenth": (1.0, 1.0),
    "nineteenth": (0.5, 0.2),
    "twentieth": (0.9, 0.81),
    "twentyfirst": (0.87, 0.87),
    "twentysecond": (1.0, 0.81),
    "twentythird": (1.0, 1.0),
    "twentyfourth": (0.87, 0.87),
    "twentyfifth": (0.33, 0.33),
    "twentysixth": (1.0, 0.75),
    "twentyseventh": (1.0, 1.0),
    "twentyeighth": (0.66, 0.8),
    "twentyninth": (0.85, 1.0),
    "thirtieth": (0.66, 0.5),
    "thirtyfirst": (0.87, 0.77),
    "thirtysecond": (1.0, 0.66),
    "thirtythird": (1.0, 0.8),
    "thirtyfourth": (0.88, 0.94),
    "thirtyfifth": (0.6, 1.0),
    "thirtysixth": (1.0, 1.0),
    "thirtyseventh": (1.0, 0.87),
    "thirtyeighth": (0.5, 1.0),
    "thirtyninth": (1.0, 1.0),
    "fortieth": (1.0, 0.75),
    "fortyfirst": (1.0, 0.5),
    "fortysecond": (1.0, 1.0),
    "fortythird": (1.0, 1.0),
    "fortyfourth": (1.0, 1.0),
    "fortyfifth": (1.0, 0.83),
    "fortysixth": (0.66, 1.0),
}
#: Worker processes of the wall-clock run: the issue's target is for a 2-core machine.
JOBS = 2
#: AC105 is AC101 with a better fix (the value could move to the end): a miss labelled AC101 is found by either.
_SAME = {"AC105": "AC101"}


@dataclass(frozen=True)
class Label:
    """A judged place: ``file`` relative to the corpus root, the rule, and the verdict with its reason."""

    file: str
    line: int
    code: str
    verdict: str
    """``TP`` or ``FP`` for a finding; ``miss`` for a real problem the linter should report there."""
    reason: str


@dataclass
class Score:
    """One rule's (or all rules') figures."""

    tp: int = 0
    fp: int = 0
    unlabelled: list[str] = field(default_factory=list)
    relevant: int = 0
    found: int = 0
    missed: list[str] = field(default_factory=list)

    @property
    def precision(self) -> float:
        reported = self.tp + self.fp + len(self.unlabelled)
        return self.tp / reported if reported else 1.0

    @property
    def recall(self) -> float:
        return self.found / self.relevant if self.relevant else 1.0


def fetch(cache: Path, corpus: str) -> Path:
    """The corpus unpacked under ``cache/src/CORPUS`` (one folder per sdist), downloading and checking what is
    missing."""
    packages = tomllib.loads((HERE / f"lint_corpus_{corpus}.toml").read_text())["package"]
    downloads, root = cache / "sdist", cache / "src" / corpus
    downloads.mkdir(parents=True, exist_ok=True)
    root.mkdir(parents=True, exist_ok=True)
    for package in packages:
        archive = _sdist(downloads, package["name"], package["version"])
        if archive is None:
            subprocess.run(
                [
                    sys.executable,
                    "-m",
                    "pip",
                    "download",
                    "--quiet",
                    "--no-deps",
                    "--no-binary",
                    ":all:",
                    "--python-version",
                    "3.12",
                    "--ignore-requires-python",  # the sources are read, not run: a package for older Pythons too
                    "-d",
                    str(downloads),
                    f"{package['name']}=={package['version']}",
                ],
                check=True,
            )
            archive = _sdist(downloads, package["name"], package["version"])
        if archive is None:
            raise SystemExit(f"pip downloaded no sdist of {package['name']} {package['version']}")
        digest = hashlib.sha256(archive.read_bytes()).hexdigest()
        if digest != package["sha256"]:
            raise SystemExit(f"{archive.name}: sha256 {digest}, expected {package['sha256']}; delete it and rerun")
        target = root / archive.name.removesuffix(".tar.gz")
        if not (target / ".unpacked").exists():
            with tarfile.open(archive) as tar:
                tar.extractall(root, filter="data")
            (target / ".unpacked").touch()
    return root


def _sdist(folder: Path, name: str, version: str) -> Path | None:
    # Hyphens and underscores alike: some sdists keep the hyphens of the project's name (erniebot-agent-0.5.2.tar.gz).
    stem = f"{name}-{version}.tar.gz".lower().replace("-", "_")
    return next((path for path in folder.iterdir() if path.name.lower().replace("-", "_") == stem), None)


def labels(corpus: str) -> list[Label]:
    text = (HERE / f"lint_labels_{corpus}.toml").read_text()
    return [Label(**entry) for entry in tomllib.loads(text).get("label", [])]


def score(findings: tuple[Finding, ...], root: Path, judged: list[Label]) -> dict[str, Score]:
    """Per rule and ``all``: every finding matched to its label, every TP label and miss to a finding."""
    by_place = {(label.file, label.line, label.code): label for label in judged if label.verdict != "miss"}
    reported = set()
    scores: dict[str, Score] = {}
    for finding in findings:
        place = (Path(finding.path).relative_to(root).as_posix(), finding.line, finding.code)
        reported.add(place)
        reported.add((place[0], place[1], _SAME.get(place[2], place[2])))
        label = by_place.get(place)
        for key in (finding.code, "all"):
            rule = scores.setdefault(key, Score())
            if label is None:
                rule.unlabelled.append(f"{place[0]}:{place[1]} {place[2]}")
            elif label.verdict == "TP":
                rule.tp += 1
            else:
                rule.fp += 1
    for label in judged:
        if label.verdict == "FP":
            continue
        for key in (label.code, "all"):
            rule = scores.setdefault(key, Score())
            rule.relevant += 1
            if (label.file, label.line, label.code) in reported:
                rule.found += 1
            else:
                rule.missed.append(f"{label.file}:{label.line} {label.code} ({label.verdict})")
    return dict(sorted(scores.items()))


def big_file(root: Path, path: Path) -> None:
    """A module of about :data:`BIG_FILE_MB` MB of corpus code, its files one after another."""
    parts, size = [], 0
    for source in sorted(root.rglob("*.py")):
        text = source.read_text("utf-8", "replace")
        if "from __future__" in text:
            text = "\n".join(line for line in text.splitlines() if not line.startswith("from __future__"))
        try:
            compile(text, str(source), "exec", flags=0x400, dont_inherit=True)  # PyCF_ONLY_AST: parses here
        except SyntaxError:
            continue
        parts.append(text)
        size += len(text.encode())
        if size >= BIG_FILE_MB * 1024 * 1024:
            break
    path.write_text("\n".join(parts))


def peak_rss_mb(path: Path) -> float:
    """Peak RSS of a child process that lints ``path`` alone."""
    code = "import sys; from agentcache.lint import lint_paths; lint_paths([sys.argv[1]])"
    child = subprocess.Popen([sys.executable, "-c", code, str(path)])
    _, status, usage = os.wait4(child.pid, 0)
    child.returncode = os.waitstatus_to_exitcode(status)
    if child.returncode:
        raise SystemExit(f"linting {path} failed with exit code {child.returncode}")
    return usage.ru_maxrss / 1024


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus", choices=CORPORA, action="append", help="a corpus to score (default: all)")
    parser.add_argument("--cache", type=Path, default=DEFAULT_CACHE, help="where the corpora are downloaded")
    args = parser.parse_args()
    # first, while this process is small: a child's peak RSS counts what it shared with its parent when forked
    big = args.cache / "big_module.py"
    if not big.exists():
        big_file(fetch(args.cache, "tuned"), big)
    rss = peak_rss_mb(big)
    corpora = args.corpus or list(CORPORA)
    whole = peak_rss_mb(fetch(args.cache, corpora[0]))  # what one run keeps from module to module shows here
    failed = [f"{corpus}: {what}" for corpus in corpora for what in run(corpus, args.cache)]
    print(f"peak RSS linting a {big.stat().st_size / 2**20:.1f} MB module: {rss:.0f} MB")
    print(f"peak RSS linting the whole {corpora[0]} corpus in one process: {whole:.0f} MB")
    if rss >= RSS_MB:
        failed.append(f"peak RSS {rss:.0f} MB >= {RSS_MB} MB")
    for what in failed:
        print(f"target missed: {what}")
    return 1 if failed else 0


def run(corpus: str, cache: Path) -> list[str]:
    """Lint one corpus, print its scores and speed, and return the targets it missed."""
    root = fetch(cache, corpus)
    load = os.getloadavg()[0]
    cpu, wall = time.process_time(), time.perf_counter()
    result = lint_paths([root])
    cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    parallel = time.perf_counter()
    same = lint_paths([root], jobs=JOBS) == result
    parallel = time.perf_counter() - parallel
    load = max(load, os.getloadavg()[0])
    scores = score(result.findings, root, labels(corpus))

    print(f"\ncorpus {corpus}:")
    print(f"{'rule':6} {'findings':>8} {'TP':>4} {'FP':>4} {'unlab':>5} {'precision':>9} {'recall':>11}")
    for code, rule in scores.items():
        reported = rule.tp + rule.fp + len(rule.unlabelled)
        print(
            f"{code:6} {reported:8} {rule.tp:4} {rule.fp:4} {len(rule.unlabelled):5} {rule.precision:9.1%} "
            f"{rule.found:>3}/{rule.relevant:<3} {rule.recall:4.0%}"
        )
    notes = Counter(note.split(": ")[1] if note.count(": ") > 1 else note for note in result.notes)  # "path: kind: why"
    print(f"files checked: {result.files}; notes: {dict(sorted(notes.items()))}")
    print(
        f"speed: {result.files / cpu:.0f} files/s of CPU time in one process ({result.files / wall:.0f} files/s "
        f"wall); {result.files / parallel:.0f} files/s wall with --jobs {JOBS}; load average up to {load:.1f} "
        f"on {os.cpu_count()} CPUs"
    )
    total = scores.get("all", Score())
    for place in total.unlabelled:
        print(f"unlabelled: {place}")
    for place in total.missed:
        print(f"missed: {place}")
    return [
        what
        for what, bad in (
            (f"precision {total.precision:.1%} < {PRECISION:.0%}", total.precision < PRECISION),
            (f"recall {total.recall:.1%} < {RECALL:.0%}", total.recall < RECALL),
            (f"{len(total.unlabelled)} unlabelled findings", bool(total.unlabelled)),
            (
                f"{result.files / parallel:.0f} files/s wall with --jobs {JOBS} < {FILES_PER_SECOND}",
                result.files / parallel < FILES_PER_SECOND,
            ),
            (f"--jobs {JOBS} found something else than one process", not same),
        )
        if bad
    ]


if __name__ == "__main__":
    sys.exit(main())

"""The public Coded TeraSort (AvestimehrResearchGroup/Coded-TeraSort: C++ and OpenMPI) as a
peer of bench_shuffle.py, built from a clone the user gives (never copied into this
repository) once per (K, r) into a cache directory, and run on given records.

The peer fixes K, r and its paths at compile time (Configuration.h, CodedConfiguration.h):
each build patches those constants in its own copy of the source. Its workers receive the
configuration as raw bytes, string pointers included, so it is linked without position
independence (-no-pie): the pointers then mean the same in every process. Its master
prints a phase table (each phase's average and maximum over the workers, in CPU seconds
by clock(); the shuffle as a sum over the workers' turns); ``run`` reads it back.
"""
from __future__ import annotations

import hashlib
import math
import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import Optional

CACHE = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "ffcode-bench"
INSTALL_HINT = "apt-get install openmpi-bin libopenmpi-dev"
CXXFLAGS = "-std=c++11 -O2 -no-pie -fno-pie"
SOURCES = ("Makefile", "Configuration.h", "CodedConfiguration.h", "CodedWorker.cc")
PHASE = re.compile(r"^0:\s+(\w+)\s+\|\s+(Avg|Sum)\s+=\s*([0-9.eE+-]+)\s+(Max|Rate)\s+=\s*"
                   r"([0-9.eE+-]+)")
ENV = {"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1"}


class Unavailable(Exception):
    """The peer cannot be run; the message says why (one line)."""


def check(source: Optional[str]) -> Path:
    """The clone's directory, once it and OpenMPI's compiler and launcher are found."""
    if source is None:
        raise Unavailable("no --peer-src given (a clone of "
                          "github.com/AvestimehrResearchGroup/Coded-TeraSort)")
    src = Path(source).expanduser().resolve()
    missing = [name for name in SOURCES if not (src / name).is_file()]
    if missing:
        raise Unavailable(f"{src} is not a Coded-TeraSort clone (no {', '.join(missing)})")
    for tool in ("mpic++", "mpirun"):
        if shutil.which(tool) is None:
            raise Unavailable(f"{tool} not found; {INSTALL_HINT}")
    return src


def build(src: Path, workers: int, load: int) -> Path:
    """The peer's TeraSort, CodedTeraSort and Splitter for K = workers and r = load, built
    once into the cache (keyed by the source's contents)."""
    digest = hashlib.sha256()
    for path in sorted(src.glob("*")):
        if path.is_file() and path.suffix in (".cc", ".h", "") and path.name != "README":
            digest.update(path.name.encode() + path.read_bytes())
    home = CACHE / f"coded-terasort-{digest.hexdigest()[:12]}-K{workers}-r{load}"
    if (home / "CodedTeraSort").is_file() and (home / "TeraSort").is_file():
        return home
    shutil.rmtree(home, ignore_errors=True)
    shutil.copytree(src, home, ignore=shutil.ignore_patterns(".git", "Input", "Output",
                                                             "Partition"))
    for name in ("Input", "Output", "Partition"):
        (home / name).mkdir()
    _patch(home / "Configuration.h", {
        r"numReducer = \d+;": f"numReducer = {workers};",
        r'"\./Input/[^"]*"': '"./Input/data"', r'"\./Output/[^"]*"': '"./Output/out"',
        r'"\./Partition/[^"]*"': '"./Partition/part"'})
    _patch(home / "CodedConfiguration.h", {
        r"numInput = \d+;": f"numInput = {math.comb(workers, load)};",
        r"numReducer = \d+;": f"numReducer = {workers};", r"load = \d+;": f"load = {load};",
        r'"\./Input/[^"]*"': '"./Input/data-C"', r'"\./Output/[^"]*"': '"./Output/out-C"',
        r'"\./Partition/[^"]*"': '"./Partition/part-C"'})
    done = subprocess.run(["make", "TeraSort", "CodedTeraSort", "Splitter",
                           f"CFLAGS={CXXFLAGS}"], cwd=home, capture_output=True, text=True)
    if done.returncode:
        shutil.rmtree(home, ignore_errors=True)
        raise Unavailable(f"the peer did not build: {done.stderr.strip().splitlines()[-1:]}")
    return home


def _patch(path: Path, replacements: dict) -> None:
    text = path.read_text()
    for pattern, value in replacements.items():
        text, count = re.subn(pattern, value, text)
        if not count:
            raise Unavailable(f"{path.name} has no {pattern!r} to set: another version of "
                              f"the peer?")
    path.write_text(text)


def place(home: Path, records: bytes) -> None:
    """The records as the peer's input, split by its own Splitter for both programs."""
    for name in ("data", "data-C"):
        (home / "Input" / name).write_bytes(records)
    for args in ([], ["code"]):
        subprocess.run(["./Splitter", *args], cwd=home, capture_output=True, check=True)


def run(home: Path, workers: int, coded: bool, timeout: float = 600.0) -> tuple[dict, list]:
    """Run TeraSort or CodedTeraSort on the placed input with K workers (and its master)
    over ``mpirun --oversubscribe``: ({phase: seconds (the maximum over the workers; the
    shuffle's sum)}, [each reducer's output bytes])."""
    program = "./CodedTeraSort" if coded else "./TeraSort"
    done = subprocess.run(["mpirun", "--oversubscribe", "-np", str(workers + 1), program],
                          cwd=home, capture_output=True, text=True, timeout=timeout,
                          env=dict(os.environ, **ENV))
    if done.returncode:
        raise Unavailable(f"{program} failed: {done.stdout.strip().splitlines()[-1:]}")
    phases = {}
    for line in done.stdout.splitlines():
        match = PHASE.match(line.strip())
        if match:
            name, kind, first, _, second = match.groups()
            phases[name.lower()] = float(first) if kind == "Sum" else float(second)
    stem = "out-C" if coded else "out"
    outputs = [(home / "Output" / f"{stem}_{q}").read_bytes() for q in range(workers)]
    return phases, outputs

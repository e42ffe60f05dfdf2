#!/usr/bin/env python3
"""clang-tidy's checks in .clang-tidy over every translation unit of core/.

Runs over the build folder's compile_commands.json and fails, listing each
warning, when any is found. A translation unit's result is kept in a cache
keyed by what clang-tidy would read: its preprocessed source (every header
it includes), its own text where it holds a NOLINT comment (which the
preprocessor drops; headers may hold none), its flags, the checks and
clang-tidy's version. So a run after a small change checks only the units
that change reaches, as ccache does for the build: cold, the 207 units take
about 35 min on two cores (a LibTorch unit 30 to 60 s); warm, about 100 s
(the preprocessing that makes the keys).

    packaging/clang_tidy.py [--build build/default] [--jobs N] [--cache DIR]
"""

import argparse
import concurrent.futures
import hashlib
import json
import os
import re
import shlex
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# The checkout's and the build folder's paths are replaced in what is hashed
# and kept, so that a fresh clone in another folder finds the same results.
ROOT_MARK = "@ROOT@"


def parse_arguments():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--build", default="build/default", help="build folder with compile_commands.json")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    cache_home = os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache")
    parser.add_argument("--cache", default=os.path.join(cache_home, "tunebench", "clang-tidy"))
    return parser.parse_args()


def tidy_command_of(entry):
    """The compile command as clang reads it: GCC's precompiled header is
    not a file clang can load, so each unit includes its own headers (as it
    must for any build without the PCH)."""
    words = shlex.split(entry["command"])
    kept, skip = [], False
    for index, word in enumerate(words):
        if skip:
            skip = False
            continue
        if word == "-include" and index + 1 < len(words) and words[index + 1].endswith("cmake_pch.hxx"):
            skip = True
            continue
        if word == "-Winvalid-pch":
            continue
        kept.append(word)
    return kept


UNITY_INCLUDE = re.compile(r'^#include "([^"]+)"$', re.MULTILINE)


def unit_entries(entry):
    """A compile database entry as the units it compiles: a unity batch
    (cmake/TunebenchUnity.cmake) is each file it includes, with the batch's
    flags and the object path that file has in a build without batches, so
    that a file's cache key is the same either way."""
    file = Path(entry["file"])
    if file.parent.name != "Unity" or not file.name.startswith("unity_"):
        return [entry]
    target_dir = file.parent.parent  # <build>/<folder>/CMakeFiles/<target>.dir
    build_root = Path(entry["directory"])
    binary_dir = target_dir.parent.parent
    source_dir = ROOT / binary_dir.relative_to(build_root)
    units = []
    for source in UNITY_INCLUDE.findall(file.read_text()):
        path = Path(source)
        # CMake names an object by its source's path below the target's
        # source folder, or below its build folder for a generated source.
        base = source_dir if path.is_relative_to(source_dir) else binary_dir
        relative = path.relative_to(base) if path.is_relative_to(base) else Path(path.name)
        object_file = target_dir / (str(relative) + ".o")
        command = entry["command"].replace(
            f"-o {(file.parent / (file.name + '.o')).relative_to(build_root)}",
            f"-o {object_file.relative_to(build_root)}").replace(f"-c {file}", f"-c {source}")
        units.append(dict(entry, file=source, command=command))
    return units


def normalised(text, build):
    """`text` with the build folder's and the checkout's paths as marks (the
    build folder first: it lies inside the checkout)."""
    return text.replace(str(build), ROOT_MARK + "/build").replace(str(ROOT), ROOT_MARK)


def restored(text, build):
    return text.replace(ROOT_MARK + "/build", str(build)).replace(ROOT_MARK, str(ROOT))


def preprocessed(words, directory):
    """The unit as the compiler sees it after the preprocessor, without line
    markers: every header's text is in it."""
    command = list(words)
    output_at = command.index("-o")
    del command[output_at : output_at + 2]
    command = [w for w in command if w != "-c"] + ["-E", "-P"]
    result = subprocess.run(command, cwd=directory, capture_output=True)
    if result.returncode != 0:
        raise RuntimeError(f"preprocessing failed: {shlex.join(command)}\n{result.stderr.decode(errors='replace')}")
    return result.stdout


def cache_key(entry, words, salt, build):
    digest = hashlib.sha256(salt)
    digest.update(normalised(shlex.join(words), build).encode())
    digest.update(normalised(preprocessed(words, entry["directory"]).decode(errors="replace"), build).encode())
    # The preprocessor drops comments, and clang-tidy reads NOLINT comments:
    # a unit's own text counts where it has one (headers may not, main()).
    source = Path(entry["file"]).read_text(errors="replace")
    if "NOLINT" in source:
        digest.update(source.encode())
    return digest.hexdigest()


def headers_with_nolint():
    """Core headers holding a NOLINT comment: the cache keys cannot see it."""
    return [str(h.relative_to(ROOT)) for h in sorted((ROOT / "core").rglob("*.h"))
            if "NOLINT" in h.read_text(errors="replace")]


def run_tidy(entry, database, build):
    result = subprocess.run(
        # Clang is not the compiler the flags were written for: GCC's warning
        # options it does not know, and GNU extensions GCC accepts under
        # -Wpedantic -Werror (`, ##__VA_ARGS__`), must not stop it. Neither
        # changes what clang-tidy reports of a unit it can read.
        ["clang-tidy", "-p", database, "--quiet", "--extra-arg=-Wno-unknown-warning-option",
         "--extra-arg=-Wno-error", entry["file"]],
        cwd=ROOT, capture_output=True, text=True)
    if result.returncode != 0:  # a compiler error: the unit was not checked
        raise RuntimeError(f"clang-tidy could not check {entry['file']}:\n{result.stdout}\n{result.stderr}")
    return normalised(result.stdout, build)


def check_unit(entry, words, salt, database, build, cache):
    key = cache_key(entry, words, salt, build)
    kept = cache / key[:2] / key
    if kept.exists():
        return restored(kept.read_text(), build), True
    output = run_tidy(entry, database, build)
    kept.parent.mkdir(parents=True, exist_ok=True)
    # Written whole or not at all: a run stopped halfway leaves no half result.
    with tempfile.NamedTemporaryFile("w", dir=kept.parent, delete=False) as part:
        part.write(output)
    os.replace(part.name, kept)
    return restored(output, build), False


def warnings_in(output):
    """Each warning once, with the lines that show it (a header's warning
    comes from every unit that includes it)."""
    found, current = {}, None
    for line in output.splitlines():
        if re.search(r":\d+:\d+: (warning|error):", line):
            current = line
            found.setdefault(current, [])
        elif current is not None and not re.search(r":\d+:\d+: note:", line):
            found[current].append(line)
        else:
            current = None
    return found


def main():
    arguments = parse_arguments()
    build = (ROOT / arguments.build).resolve()
    database_file = build / "compile_commands.json"
    if not database_file.exists():
        sys.exit(f"{database_file}: missing; configure the build first (cmake --preset default)")
    entries = [unit for e in json.loads(database_file.read_text()) for unit in unit_entries(e)
               if Path(unit["file"]).resolve().is_relative_to(ROOT / "core")]
    if headers := headers_with_nolint():
        sys.exit("NOLINT in a header, which the cache cannot see (put it in the .cpp that needs "
                 "it, or fix the finding): " + ", ".join(headers))
    config = (ROOT / ".clang-tidy").read_bytes()
    version = subprocess.run(["clang-tidy", "--version"], capture_output=True, text=True).stdout
    salt = config + version.encode()
    cache = Path(arguments.cache)

    database = build / "clang-tidy"
    database.mkdir(exist_ok=True)
    commands = {e["file"]: tidy_command_of(e) for e in entries}
    (database / "compile_commands.json").write_text(json.dumps(
        [dict(e, command=shlex.join(commands[e["file"]])) for e in entries], indent=1))

    warnings, reused = {}, 0
    with concurrent.futures.ThreadPoolExecutor(max_workers=arguments.jobs) as pool:
        futures = [pool.submit(check_unit, e, commands[e["file"]], salt, str(database), build, cache)
                   for e in entries]
        for future in concurrent.futures.as_completed(futures):
            output, hit = future.result()
            reused += hit
            warnings.update(warnings_in(output))
    print(f"clang-tidy over {len(entries)} units of core/ ({reused} unchanged since a cached run): "
          f"{len(warnings)} warning(s)")
    for warning, lines in sorted(warnings.items()):
        print(warning)
        print("\n".join(lines))
    return 1 if warnings else 0


if __name__ == "__main__":
    sys.exit(main())

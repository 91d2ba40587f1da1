#!/usr/bin/env python3
"""bench/probe-study/sites.py - name the functions of a --count-probes line's probe sites.

Owns: turning the harness's call-site offsets into function names, for "where do the probes
run". Reads one JSON line (harness.c --count-probes) on stdin, the binary that printed it as the
argument; writes the line back with "top_functions": [[name, probes], ...] (the top sites summed
by the function that contains them), using `nm -n` (the study builds PIE binaries whose nm
addresses are offsets from the start of the executable, which is what the sites are).
"""
import bisect
import json
import subprocess
import sys


def symbols(binary):
    text = subprocess.run(["nm", "-n", "--defined-only", binary], capture_output=True,
                          text=True, check=True).stdout
    addrs, names = [], []
    for line in text.splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[1] in "tTwW":
            addrs.append(int(parts[0], 16))
            names.append(parts[2])
    return addrs, names


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: sites.py BINARY < count-line.json")
    line = json.loads(sys.stdin.read())
    addrs, names = symbols(sys.argv[1])
    by_fn = {}
    for pc, n in line.get("top_sites", []):
        i = bisect.bisect_right(addrs, int(pc, 16)) - 1
        name = names[i] if i >= 0 else "?"
        by_fn[name] = by_fn.get(name, 0) + n
    line["top_functions"] = sorted(by_fn.items(), key=lambda kv: -kv[1])
    print(json.dumps(line, separators=(",", ":")))


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""tests/layout/check_includes.py - the include rules between the source tree's areas (CTest
layout.includes; issue 28).

Owns: the table of which area may include which (RULES below) and the check. An area is a folder
of src/ (src/common, src/sched, ...) or a top-level folder (sim, tests, ...). Every quoted
#include that crosses areas must be allowed by the including area's rule: a whole area ("src/common")
or one header ("src/sched/driver.h", the policy driver the simulator and the tests share). Public
headers (<jiffy/...>, include/) are everyone's. Leaves stay leaves: src/common includes nothing
from src/, src/sched only src/common, include/ nothing from src/.

Usage: check_includes.py [ROOT]    (ROOT: the repository, default this file's ../..)
       check_includes.py --selftest  (a leaf that includes from above must fail the check)
Exit 0 when every include is allowed; 1 with one line per violation (file:line, the include,
the rule it breaks).
"""
import os
import re
import sys
import tempfile

# The runtime's cycle is admitted inside one area (src/runtime: the scheduler core, preempt/ and
# net/ are one module, as in Go's runtime and Caladan's); nothing else may point up. Its clients
# (sync, the blocking pool, uthread-local storage, the pthread shim) name the runtime headers they
# use, never its private ones (preempt/deadline_arm.h, fiber.h, pfn.h, probes.h, context.h).
RULES = {
    "include": [],
    "src/common": [],
    "src/sched": ["src/common"],
    "src/runtime": ["src/common", "src/sched"],
    "src/sync": ["src/common", "src/runtime/runtime.h"],
    "src/blocking": ["src/common", "src/runtime/runtime.h", "src/runtime/net/netpoll.h"],
    "src/local": ["src/common", "src/runtime/runtime.h"],
    "src/shim": ["src/common", "src/runtime/preempt/preempt.h"],
    "sim": ["src/common", "src/sched/driver.h", "apps", "tests"],
    "fuzz": ["apps", "sim", "src/runtime/preempt/preempt.h"],
    "tests": ["src/common", "src/sched/driver.h", "apps", "sim"],
    "bench": ["apps"],
    "tools": ["apps", "bench", "src/common"],
    "apps": [],
    "examples": [],
}
INC = re.compile(r'\s*#\s*include\s+"([^"]+)"')
SEARCH = ["src", "include", "apps/common", "sim", "tests", "bench"]  # -I paths of the builds


def area(rel):
    parts = rel.split("/")
    return "/".join(parts[:2]) if parts[0] == "src" and len(parts) > 2 else parts[0]


def resolve(root, rel, name):
    cand = os.path.normpath(os.path.join(os.path.dirname(rel), name))
    if os.path.exists(os.path.join(root, cand)):
        return cand
    for d in SEARCH:
        cand = os.path.normpath(os.path.join(d, name))
        if os.path.exists(os.path.join(root, cand)):
            return cand
    return None


def allowed(src_area, target):
    tgt_area = area(target)
    if tgt_area == src_area or tgt_area == "include":
        return True
    for r in RULES.get(src_area, []):
        if target == r or tgt_area == r:
            return True
    return False


def check(root, counts=None):
    bad = []
    tops = sorted({a.split("/")[0] for a in RULES})
    for dp, dn, fn in (w for t in tops for w in os.walk(os.path.join(root, t))):
        rel_dir = os.path.relpath(dp, root)
        dn[:] = [d for d in dn if not d.startswith((".", "build")) and d not in ("target", "node_modules")]
        for f in fn:
            if not f.endswith((".c", ".h", ".cpp", ".S", ".def")):
                continue
            rel = os.path.normpath(os.path.join(rel_dir, f))
            a = area(rel)
            if counts is not None:
                counts["files"] += 1
            if a not in RULES:
                bad.append(f"{rel}: area {a} has no rule in tests/layout/check_includes.py")
                continue
            with open(os.path.join(root, rel), errors="replace") as fh:
                for n, line in enumerate(fh, 1):
                    m = INC.match(line)
                    if not m:
                        continue
                    target = resolve(root, rel, m.group(1))
                    if counts is not None and target and area(target) != a:
                        counts["crossing"] += 1
                    if target is None or allowed(a, target):
                        continue  # a generated or system header, or an allowed one
                    bad.append(f'{rel}:{n}: #include "{m.group(1)}" ({target}): {a} may include '
                               f"only {', '.join(RULES[a]) or 'nothing outside itself'}")
    return bad


def selftest():
    with tempfile.TemporaryDirectory() as d:
        for p, text in {
            "src/runtime/runtime.h": "",
            "src/runtime/preempt/deadline_arm.h": "",
            "src/common/spinlock.h": '#include "../runtime/runtime.h"\n',
            "src/sched/ws.c": '#include "../common/spinlock.h"\n',
            "src/sync/mutex.c": '#include "../runtime/runtime.h"\n',
            "src/sync/cond.c": '#include "../runtime/preempt/deadline_arm.h"\n',
        }.items():
            os.makedirs(os.path.join(d, os.path.dirname(p)), exist_ok=True)
            with open(os.path.join(d, p), "w") as fh:
                fh.write(text)
        bad = check(d)
        want = ["src/common/spinlock.h:1:", "src/sync/cond.c:1:"]
        if len(bad) != 2 or not all(b.startswith(w) for b, w in zip(sorted(bad), want)):
            print("selftest FAILED: expected exactly the leaf's include and the client's include "
                  "of a private runtime header, got:", bad)
            return 1
        for b in sorted(bad):
            print("selftest ok:", b)
    return 0


def main():
    if sys.argv[1:] == ["--selftest"]:
        return selftest()
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "..")
    counts = {"files": 0, "crossing": 0}
    bad = check(os.path.abspath(root), counts)
    for b in bad:
        print(b)
    if bad:
        print(f"layout.includes: {len(bad)} include(s) break the rules")
        return 1
    print(f"layout.includes: {counts['files']} files, {counts['crossing']} includes between areas, "
          "every one allowed")
    if counts["files"] < 100:
        print("layout.includes: fewer than 100 files found: wrong ROOT?")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

# tests/debug/gdb_session.py - the gdb side of tests debug.gdb.*: run inside `gdb -batch -x`, it
# drives the Jiffy gdb extension and prints what every command printed, for check_gdb.py to judge.
#
# Owns: the sequence of commands and the "=== <command>" section format. It checks nothing itself.
# Environment (set by check_gdb.py):
#   JFT_GDB_PHASE   "live": run the target (mode JFT_GDB_MODE) to gdbt_ready(), run the commands,
#                   write a core file to JFT_GDB_CORE with gcore, continue to the end and run
#                   `jiffy threads` once more (no runtime any more);
#                   "core": gdb was started on the target and that core file; run the commands.
# Every command's error is printed as "ERROR: <message>" in its section, never raised: one
# failing command must not hide what the others print.
import os
import re

import gdb


def section(cmd, label=None):
    print("=== %s" % (label or cmd))
    try:
        out = gdb.execute(cmd, to_string=True)
    except gdb.error as e:
        out = "ERROR: %s\n" % e
    print(out, end="" if out.endswith("\n") else "\n")
    return out


phase = os.environ["JFT_GDB_PHASE"]
gdb.execute("set pagination off")
gdb.execute("set confirm off")
gdb.execute("set width 0")
if phase == "live":
    gdb.execute("break gdbt_ready")
    section("run %s" % os.environ["JFT_GDB_MODE"])

table = section("jiffy threads")
section("info uthreads")
section("jiffy workers")
for line in table.splitlines():
    m = re.match(r"^\s*(\d+) ", line)
    if m:
        section("jiffy bt %s" % m.group(1))
section("jiffy bt gdbt-mutex")  # by name (only in mode "states")
section("jiffy bt 999999999")
section("jiffy bt")
if phase == "live":
    section("gcore %s" % os.environ["JFT_GDB_CORE"])
    section("delete")
    section("continue")
    section("jiffy threads", "after exit: jiffy threads")
print("=== end")

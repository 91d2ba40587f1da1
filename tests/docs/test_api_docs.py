#!/usr/bin/env python3
"""tests/docs/test_api_docs.py - the API reference builds from the public headers without a
single warning, and the check would catch a documentation mistake. CTest: docs.api (plain builds;
label "docs"; ~10 s).

Usage: test_api_docs.py WORKDIR   (scratch space; the reference is built in WORKDIR/ok)

What it proves:
  1. scripts/kerneldoc-filter.py maps kernel-doc as docs/Doxyfile expects, line for line, on a
     small header written here: "name() - text" -> \\brief, "@x:" -> \\param (functions) or the
     member's own /**< */ (structs), "Return:" -> \\return, "@x" in prose -> \\p x, a trailing
     member comment -> /**< */, "private" -> \\private, the file comment -> \\file; an @x naming
     no member is reported (exit 1, "<file>:<line>: warning: ...").
  2. scripts/api-docs.sh on include/jiffy: exit 0, no warning, and the HTML holds what the
     headers say (jf_spawn's parameters, a struct member's text from its @x: line, a macro).
  3. scripts/api-docs.sh on a copy of include/jiffy with four mistakes (a function's comment
     removed, a @param renamed to one the function does not have, a struct's @x: naming no
     member, a member left without any documentation): exit 1 and each mistake reported with
     its header and line.
"""

import os
import re
import shutil
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FILTER = os.path.join(ROOT, "scripts", "kerneldoc-filter.py")
API_DOCS = os.path.join(ROOT, "scripts", "api-docs.sh")

failures = []


def check(ok, what, detail=""):
    print(f"   {'ok  ' if ok else 'FAIL'} {what}" + ("" if ok else f": {detail}"))
    if not ok:
        failures.append(what)


SAMPLE = """\
/*
 * jiffy/sample.h - a header for the filter's test.
 */
/**
 * struct jf_s - a struct.
 * @a: the first member.
 * @b: the second one, whose text goes on
 *     over two lines.
 */
struct jf_s {
	int a;
	int b;
	int c; /* the third, documented on its line */
	int d; /* private: not in the reference */
};

/**
 * jf_f() - do something with @x.
 * @x: the input, e.g. <5> & 10%.
 * @y, @z: two more.
 * It goes on here.
 *
 * Return: 0, or -EINVAL.
 */
int jf_f(int x, int y, int z);
/** jf_g() - without parameters documented. Return: 1. */
int jf_g(void);
/**
 * struct jf_t - a struct with a mistake.
 * @nope: no such member.
 */
struct jf_t {
	int e; /* e */
};
"""


def test_filter(work):
    path = os.path.join(work, "sample.h")
    with open(path, "w") as f:
        f.write(SAMPLE)
    p = subprocess.run([sys.executable, FILTER, path], capture_output=True, text=True)
    out = p.stdout.split("\n")
    check(len(out) == len(SAMPLE.split("\n")), "the filter keeps the line count",
          f"{len(out)} lines for {len(SAMPLE.split(chr(10)))}")

    def line(n):  # 1-based, as in SAMPLE
        return out[n - 1] if n <= len(out) else ""

    want = {
        1: "/** \\file",
        2: " * \\brief a header for the filter's test.",
        5: " * \\brief a struct.",
        11: "\tint a; /**< the first member. */",
        12: "\tint b; /**< the second one, whose text goes on over two lines. */",
        13: "\tint c; /**< the third, documented on its line */",
        14: "\tint d; /**< \\private not in the reference */",
        18: " * \\brief do something with \\p x.",
        19: " * \\param x the input, e.g. \\<5\\> \\& 10\\%.",
        20: " * \\param y,z two more.",
        21: " * \\details It goes on here.",
        23: " * \\return 0, or -EINVAL.",
        26: "/** \\brief without parameters documented. \\return 1. */",
    }
    for n, text in want.items():
        check(line(n) == text, f"sample.h:{n} -> {text!r}", f"got {line(n)!r}")
    check(p.returncode == 1 and re.search(r"sample\.h:30: warning: @nope names no member",
                                          p.stderr) is not None,
          "an @x naming no member: exit 1 and a warning with its line",
          f"exit {p.returncode}, stderr {p.stderr!r}")


def run_api_docs(args):
    p = subprocess.run(["bash", API_DOCS, *args], capture_output=True, text=True, timeout=300)
    return p.returncode, p.stdout, p.stderr


def html_text(path):
    with open(path, encoding="utf-8") as f:
        s = f.read()
    s = re.sub(r"<[^>]+>", "", s)
    for a, b in (("&lt;", "<"), ("&gt;", ">"), ("&amp;", "&"), ("&#160;", " "), ("&quot;", '"')):
        s = s.replace(a, b)
    return re.sub(r"\s+", " ", s)


def test_real_headers(work):
    out = os.path.join(work, "ok")
    rc, so, se = run_api_docs([out])
    check(rc == 0 and not se.strip() and "no warnings" in so,
          "api-docs.sh on include/jiffy: exit 0, no warning", f"exit {rc}, stderr {se[-2000:]!r}")
    html = os.path.join(out, "html")
    if not os.path.isdir(html):
        check(False, "the HTML exists", html)
        return
    thread = html_text(os.path.join(html, "thread_8h.html"))
    check("create a runnable uthread running fn(arg)" in thread and
          re.search(r"Parameters.*out ?receives the handle", thread) is not None,
          "thread.h's page: jf_spawn's brief and parameters")
    attr = html_text(os.path.join(html, "structjf__sched__attr.html"))
    check("preferred worker (-1: the policy decides)" in attr,
          "struct jf_sched_attr's page: a member's text from its @worker: line")
    sync = html_text(os.path.join(html, "sync_8h.html"))
    check("JF_MUTEX_INITIALIZER" in sync and "an unlocked jf_mutex_t" in sync,
          "sync.h's page: a macro and its text")


def test_broken_headers(work):
    copy = os.path.join(work, "broken", "jiffy")
    shutil.rmtree(os.path.join(work, "broken"), ignore_errors=True)
    shutil.copytree(os.path.join(ROOT, "include", "jiffy"), copy)
    path = os.path.join(copy, "thread.h")
    with open(path) as f:
        s = f.read()
    edits = [
        ("/** jf_yield() - let other runnable uthreads run; returns at once if there are none. */\n",
         ""),
        (" * @cfg:    configuration;", " * @config: configuration;"),
        (" * @detached:   start detached", " * @nosuch:     start detached"),
    ]
    for old, new in edits:
        if s.count(old) != 1:
            check(False, f"thread.h still has {old.strip()[:50]!r} to break (update this test)")
            return
        s = s.replace(old, new)
    with open(path, "w") as f:
        f.write(s)
    rc, so, se = run_api_docs(["--headers", copy, os.path.join(work, "broken-out")])
    check(rc == 1, "api-docs.sh on the broken copy: exit 1", f"exit {rc}, stderr {se[-2000:]!r}")
    for what, pattern in [
        ("the undocumented function", r"jiffy/thread\.h:\d+: \w+: Member jf_yield\(void\) "
                                      r"\(function\) of file thread\.h is not documented"),
        ("the @param the function lacks", r"jiffy/thread\.h:\d+: \w+: argument 'config' of "
                                          r"command @param is not found"),
        ("the @x naming no member", r"jiffy/thread\.h:\d+: warning: @nosuch names no member"),
        ("the member without documentation", r"jiffy/thread\.h:\d+: \w+: Member detached "
                                             r"\(variable\) of struct jf_attr is not documented"),
    ]:
        check(re.search(pattern, se) is not None, f"reported: {what}", se[-2000:])


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: test_api_docs.py WORKDIR")
    work = os.path.abspath(sys.argv[1])
    os.makedirs(work, exist_ok=True)
    print("the filter:")
    test_filter(work)
    print("include/jiffy:")
    test_real_headers(work)
    print("a broken copy:")
    test_broken_headers(work)
    if failures:
        print(f"docs.api: {len(failures)} FAILED")
        sys.exit(1)
    print("docs.api: passed")


if __name__ == "__main__":
    main()

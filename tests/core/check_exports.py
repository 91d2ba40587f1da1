#!/usr/bin/env python3
"""tests/core/check_exports.py - libjiffy.so exports the public API and nothing else (CTest
core.exports).

Owns: the comparison of the shared library's dynamic symbol table (nm -D --defined-only) with
what the public headers declare JF_API (include/jiffy/export.h): every exported symbol must be a
JF_API declaration, or one of the pthread functions the shim interposes (src/shim/pthread_shim.c),
or a symbol the linker itself defines; and every JF_API declaration must be exported. Prints both
lists' sizes, and each offending name.

usage: check_exports.py LIBJIFFY_SO INCLUDE_DIR
"""
import glob
import os
import re
import subprocess
import sys

LINKER = {"_edata", "_end", "__bss_start", "_init", "_fini"}
SHIM = re.compile(r"^pthread_(mutex|rwlock|spin)_\w+$")


unmarked = []


def declared(include_dir):
    names = set()
    for path in sorted(glob.glob(os.path.join(include_dir, "*.h"))):
        text = re.sub(r"/\*.*?\*/", " ", open(path).read(), flags=re.S)  # comments out
        text = re.sub(r"//[^\n]*", " ", text)
        text = re.sub(r"^#.*$", " ", text, flags=re.M)  # and the preprocessor lines
        # join declarations split over lines: every JF_API up to its ';'
        for m in re.finditer(r"JF_API\b([^;{}]*);", text):
            decl = m.group(1)
            f = re.search(r"\b(jf_?_?\w+)\s*\(", decl)
            v = re.search(r"\b(jf_?_?\w+)\s*(__attribute__\(\(.*\)\))?\s*$", decl.strip())
            if f:
                names.add(f.group(1))
            elif v:
                names.add(v.group(1))
            else:
                sys.exit(f"check_exports: cannot read the JF_API declaration in {path}: {decl!r}")
        # a function declared at file scope without JF_API would be hidden: a forgotten mark
        for line in text.splitlines():
            if (re.match(r"^[A-Za-z_]", line) and re.search(r"\bjf_?_?\w+\s*\(", line)
                    and not re.match(r"^(static|typedef|JF_API|JF_NORETURN JF_API|extern JF_API|"
                                     r"struct \w+ \{|enum|union)\b", line)):
                unmarked.append(f"{os.path.basename(path)}: {line.strip()}")
    return names


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    lib, include_dir = sys.argv[1:]
    out = subprocess.run(["nm", "-D", "--defined-only", lib], check=True, capture_output=True,
                         text=True).stdout
    exported = {line.split()[-1].split("@")[0] for line in out.splitlines() if line.strip()}
    api = declared(include_dir)
    extra = sorted(n for n in exported - api if n not in LINKER and not SHIM.match(n))
    missing = sorted(api - exported)
    shim = sorted(n for n in exported if SHIM.match(n))
    print(f"check_exports: {lib}: {len(exported)} exported; {len(api)} JF_API declarations in "
          f"{include_dir}; {len(shim)} pthread functions of the shim")
    for n in extra:
        print(f"check_exports: exported but not public (mark it JF_API in a public header, or "
              f"keep it hidden): {n}")
    for n in missing:
        print(f"check_exports: declared JF_API but not exported: {n}")
    for d in unmarked:
        print(f"check_exports: a public declaration without JF_API (hidden from the shared "
              f"library): {d}")
    if extra or missing or unmarked:
        sys.exit(1)
    print("check_exports: ok")


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""scripts/kerneldoc-filter.py - Doxygen's INPUT_FILTER for Jiffy's public headers: rewrites
their kernel-doc comments into Doxygen's syntax, line for line (a warning's line number is the
header's own).

Owns: what counts as documentation in include/jiffy/*.h (docs/Doxyfile, scripts/api-docs.sh:
`make docs`, CTest docs.api) and how each piece maps:
  - a `/** ... */` block before a declaration (kernel-doc):
      "name() - text", "struct|union|enum|typedef|define name - text", "NAME - text"
                         -> \\brief text (the first paragraph)
      "@x: text" (functions, function-like macros, function-pointer typedefs) -> \\param x text
      "@x, @y: text"     -> \\param x,y text
      "@x: text" in a struct, union or enum block -> the member's or enumerator's own
                            documentation, put on its declaration line in the body (/**< text */)
      text right after the @x: lines (no blank line between) -> \\details text (not the last
                            parameter's)
      "Return: text"     -> \\return text (also inside a paragraph: "... Return: 0 or -EINVAL")
      "Context: text"    -> \\par Context: text
      "@x" in prose      -> \\p x;   "&struct x" -> struct x
  - the file's first comment, "jiffy/x.h - text" -> \\file with \\brief text
  - a comment after a struct or union member, an enumerator or a #define, on its line, documents
    it (/* text */ -> /**< text */); one whose text starts with "private" marks it \\private
    (left out of the reference, as EXCLUDE_SYMBOLS leaves out jf__* and JF__*).
Every other comment is a plain comment, as for kernel-doc: a public declaration without a
kernel-doc block stays undocumented, and Doxygen (WARN_IF_UNDOCUMENTED) says so. Doxygen's
special characters in the text (\\ < > & # $ % @) are escaped; Markdown is off in docs/Doxyfile.

What the mapping itself finds wrong (an @x in a struct's block naming no member, a comment that
does not end, a block that documents nothing) goes to stderr as "<file>:<line>: warning: ...",
with exit status 1: scripts/api-docs.sh runs the filter over every header first and fails on it.
Python 3 standard library only.

Usage: kerneldoc-filter.py HEADER   (the filtered text on stdout)
"""

import re
import sys

# "name() - text", "a() / b() - text", "struct name - text", "NAME - text"
HEADER_RE = re.compile(
    r"^\s*(?:(?P<kind>struct|union|enum|typedef|define)\s+)?"
    r"(?P<names>[A-Za-z_]\w*(?:\(\))?(?:\s*/\s*[A-Za-z_]\w*(?:\(\))?)*)\s+-\s+(?P<text>.*)$")
FILE_HEADER_RE = re.compile(r"^\s*(?:jiffy/)?[\w.]+\.h\s+-\s+(?P<text>.*)$")
ENTRY_RE = re.compile(r"^\s*@(?P<first>\w+|\.\.\.)(?P<more>(?:\s*,\s*@(?:\w+|\.\.\.))*)\s*:\s?"
                      r"(?P<text>.*)$")
SECTION_RE = re.compile(r"^\s*(?P<name>Return|Returns|Context)\s*:\s?(?P<text>.*)$")
AGGREGATE_HEAD_RE = re.compile(r"\b(struct|union|enum)\b[^;{}()]*$")

warnings = []


def warn(path, line, msg):
    warnings.append(f"{path}:{line}: warning: {msg}")


def escape(text):
    """Prose for Doxygen: its special characters escaped, kernel-doc's inline markup mapped."""
    text = text.replace("\\", "\\\\")
    for ch in "<>&#$%":
        text = text.replace(ch, "\\" + ch)
    text = re.sub(r"\\&struct\s+", "struct ", text)      # kernel-doc's &struct foo
    text = re.sub(r"(?<![\w@])@(\w+)", r"\\p \1", text)   # a parameter named in prose
    text = text.replace("@", "\\@")
    # kernel-doc's "Return:" inside a paragraph starts the return section
    text = re.sub(r"(^|(?<=[.;:)]\s)|(?<=\s\s))Returns?:\s?", r"\\return ", text)
    return text


def comment_body(lines):
    """The text of a comment spanning @lines: without /** or /*, */ and the leading " * "."""
    out = []
    for i, ln in enumerate(lines):
        s = ln
        if i == 0:
            s = re.sub(r"^\s*/\*\*?", "", s, count=1)
        if i == len(lines) - 1:
            s = re.sub(r"\*/\s*$", "", s)
        if i > 0:
            s = re.sub(r"^\s*\*(?!/) ?", "", s, count=1)
        out.append(s.rstrip())
    return out


def parse_block(body):
    """A kernel-doc block's parts: (kind, entries, text). kind: "function", "struct", "union",
    "enum", "typedef", "define", "name" or None (no "name - " header); entries: [line, [names],
    text] per @x: line, its continuation lines joined; text: @body with the header's name
    removed and None on the entries' lines."""
    kind = None
    text = list(body)
    first = next((i for i, s in enumerate(body) if s.strip()), None)
    if first is not None:
        m = HEADER_RE.match(body[first])
        if m:
            kind = m.group("kind") or ("function" if "()" in m.group("names") else "name")
            text[first] = m.group("text")
    entries = []
    i = 0
    while i < len(text):
        m = ENTRY_RE.match(text[i])
        if not m:
            i += 1
            continue
        names = [m.group("first")] + re.findall(r"@(\w+|\.\.\.)", m.group("more"))
        parts, start = [m.group("text").strip()], i
        text[i] = None
        i += 1
        # continuation: indented, non-empty lines that start no other entry or section
        while i < len(text) and text[i] and text[i][:1].isspace() and \
                not ENTRY_RE.match(text[i]) and not SECTION_RE.match(text[i]):
            parts.append(text[i].strip())
            text[i] = None
            i += 1
        entries.append([start, names, " ".join(p for p in parts if p)])
    return kind, entries, text


def wrap(indent, out, lead="/**"):
    """@out (one string per line) as a comment of as many lines."""
    n, res = len(out), []
    for i, body in enumerate(out):
        if n == 1:
            res.append(f"{indent}{lead} {body} */")
        elif i == 0:
            res.append(f"{indent}{lead} {body}".rstrip())
        elif i == n - 1:
            res.append(f"{indent} * {body} */" if body else f"{indent} */")
        else:
            res.append(f"{indent} * {body}".rstrip())
    return res


def render_block(lines, entries, text, as_members):
    """The Doxygen comment replacing the kernel-doc block on @lines (as many lines)."""
    out = [""] * len(lines)
    brief_done = False
    after_entry = False  # the line before was an @x: entry (or a continuation of one)
    for i, s in enumerate(text):
        if s is None:
            after_entry = True
            continue
        if not s.strip():
            after_entry = False
            brief_done = brief_done or any(x.strip() for x in out[:i])
            continue
        sec = SECTION_RE.match(s)
        if sec:
            brief_done, after_entry = True, False
            head = "\\par Context: " if sec.group("name") == "Context" else "\\return "
            out[i] = head + escape(sec.group("text"))
            continue
        prefix = ""
        if not brief_done and not any(x.strip() for x in out[:i]):
            prefix = "\\brief "
        elif after_entry:  # the description goes on: it is not the last entry's text
            prefix, brief_done = "\\details ", True
        after_entry = False
        out[i] = prefix + escape(s.strip() if prefix else s)
    if not as_members:
        for start, names, etext in entries:
            out[start] = "\\param " + ",".join(names) + " " + escape(etext)
    return wrap(re.match(r"^\s*", lines[0]).group(0), out)


def find_comments(src):
    """[(start, end)] of every /* */ comment outside string and character constants, and the
    offset of a comment that does not end (None if none)."""
    spans, i, n = [], 0, len(src)
    while i < n:
        c = src[i]
        if c in "\"'":
            j = i + 1
            while j < n and src[j] != c and src[j] != "\n":
                j += 2 if src[j] == "\\" else 1
            i = j + 1
        elif src.startswith("//", i):
            j = src.find("\n", i)
            i = n if j < 0 else j
        elif src.startswith("/*", i):
            j = src.find("*/", i + 2)
            if j < 0:
                return spans, i
            spans.append((i, j + 2))
            i = j + 2
        else:
            i += 1
    return spans, None


def blank_comments(src, spans):
    """@src with its comments turned into spaces (newlines kept): the code alone."""
    chars = list(src)
    for a, b in spans:
        for i in range(a, b):
            if chars[i] != "\n":
                chars[i] = " "
    return "".join(chars)


def aggregate_body_lines(code):
    """Indices (0-based) of the lines inside the braces of a struct, union or enum."""
    result, stack, stmt = set(), [], 0
    for i, c in enumerate(code):
        if c == "{":
            stack.append((bool(AGGREGATE_HEAD_RE.search(code[stmt:i])), code.count("\n", 0, i)))
            stmt = i + 1
        elif c == "}":
            if stack:
                aggregate, start = stack.pop()
                if aggregate:
                    result.update(range(start + 1, code.count("\n", 0, i) + 1))
            stmt = i + 1
        elif c == ";":
            stmt = i + 1
    return result


def declared_name(decl):
    """The name a member or enumerator declaration declares ("int (*init)(...);" -> init)."""
    decl = decl.strip()
    m = re.search(r"\(\s*\*\s*(\w+)\s*\)\s*\(", decl)     # a function pointer
    if m:
        return m.group(1)
    m = re.match(r"^(\w+)\s*(?:=[^,]*)?,?$", decl)         # an enumerator
    if m:
        return m.group(1)
    m = re.search(r"(\w+)\s*(?:\[[^\]]*\])*\s*(?::\s*\w+)?\s*;$", decl)
    return m.group(1) if m else None


def aggregate_members(code, off):
    """{name: line index} of the members (enumerators) of the first struct, union or enum body
    after offset @off of @code (its outermost level only)."""
    open_at = code.find("{", off)
    if open_at < 0:
        return {}
    names, depth, parens, stmt = {}, 0, 0, open_at + 1
    for i in range(open_at, len(code)):
        c = code[i]
        if c == "(":
            parens += 1
        elif c == ")":
            parens -= 1
        elif c == "{":
            depth += 1
        elif c == "}":
            depth -= 1
            if depth == 0:
                last = code[stmt:i].strip()
                if last and declared_name(last):  # the last enumerator, without a comma
                    names[declared_name(last)] = code.count("\n", 0, code.rfind(last, stmt, i))
                break
        elif depth == 1 and parens == 0 and c in ";,":
            name = declared_name(code[stmt:i + 1])
            if name:
                names[name] = code.count("\n", 0, i)
            stmt = i + 1
    return names


def column(src, off):
    return off - (src.rfind("\n", 0, off) + 1)


def filter_text(path, src):
    spans, unterminated = find_comments(src)
    if unterminated is not None:
        warn(path, src.count("\n", 0, unterminated) + 1, "a comment that does not end")
        return src
    code = blank_comments(src, spans)
    lines = src.split("\n")
    new = list(lines)
    in_aggregate = aggregate_body_lines(code)
    member_docs = {}  # line index -> the texts of @x: entries for the member declared there
    for k, (a, b) in enumerate(spans):
        la, lb = src.count("\n", 0, a), src.count("\n", 0, b - 1)
        text = src[a:b]
        before = lines[la][:column(src, a)]
        if k == 0 and not before.strip() and not text.startswith("/**"):
            body = comment_body(lines[la:lb + 1])
            first = next((i for i, s in enumerate(body) if s.strip()), None)
            m = FILE_HEADER_RE.match(body[first]) if first is not None else None
            if m:  # the file's own comment
                out = [escape(s) for s in body]
                out[first] = "\\brief " + escape(m.group("text"))
                new[la:lb + 1] = wrap(re.match(r"^\s*", lines[la]).group(0), out, "/** \\file")
                continue
        if text.startswith("/**") and not text.startswith("/**<") and not before.strip():
            kind, entries, rest = parse_block(comment_body(lines[la:lb + 1]))
            following = code[b:]
            as_members = kind in ("struct", "union", "enum") or (
                kind is None and re.match(r"\s*(?:typedef\s+)?(?:struct|union|enum)\b[^;{}()]*\{",
                                          following) is not None)
            if not following.strip():
                warn(path, la + 1, "a documentation block at the end of the file documents nothing")
            if as_members and entries:
                targets = aggregate_members(code, b)
                for start, names, etext in entries:
                    for name in names:
                        if name in targets:
                            member_docs.setdefault(targets[name], []).append(etext)
                        else:
                            warn(path, la + start + 1, f"@{name} names no member of the "
                                 f"{kind if kind in ('struct', 'union', 'enum') else 'type'} "
                                 "documented here")
            new[la:lb + 1] = render_block(lines[la:lb + 1], entries, rest, as_members)
            continue
        # a comment after a member, an enumerator or a #define, on its line, documents it
        if before.strip() and not text.startswith("/**<") and new[la] == lines[la] and \
                (la in in_aggregate or before.lstrip().startswith("#define")):
            inner = [re.sub(r"^\s*\*(?!/) ?", "", s).strip() for s in text[2:-2].split("\n")]
            doc = " ".join(s for s in inner if s)
            private = re.match(r"(?i)private\b[\s:,.;-]*", doc)
            doc = ("\\private " + escape(doc[private.end():])) if private else escape(doc)
            after = lines[lb][column(src, b):]
            if la == lb:
                new[la] = before + f"/**< {doc} */" + after
            else:  # the text on the first line, the others blank: the line count stays
                new[la] = before + f"/**< {doc}"
                for j in range(la + 1, lb):
                    new[j] = ""
                new[lb] = " */" + after
    for line, texts in member_docs.items():
        doc = escape(" ".join(texts))
        m = re.search(r"/\*\*<\s?(.*?)\s*\*/\s*$", new[line])
        if m:  # an @x: entry and a comment on the line: the entry's text first
            new[line] = new[line][:m.start()] + f"/**< {doc} {m.group(1)} */"
        elif "/*" not in new[line]:
            new[line] = new[line] + f" /**< {doc} */"
        else:
            warn(path, line + 1, "a member documented by an @x: entry and a comment of several "
                 "lines: keep one")
    return "\n".join(new)


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: kerneldoc-filter.py HEADER")
    path = sys.argv[1]
    with open(path, encoding="utf-8") as f:
        src = f.read()
    sys.stdout.write(filter_text(path, src))
    for w in warnings:
        print(w, file=sys.stderr)
    sys.exit(1 if warnings else 0)


if __name__ == "__main__":
    main()

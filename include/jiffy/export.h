/*
 * jiffy/export.h - JF_API: what libjiffy.so exports. The library is compiled with
 * -fvisibility=hidden, so only declarations marked JF_API in the public headers (and the
 * pthread functions its shim interposes) are visible to programs; everything else in it is
 * internal and may change in any release (soname policy: docs/api.md, CHANGELOG.md). The
 * static library is unaffected: a program linking libjiffy.a links what it names.
 */
#ifndef JIFFY_EXPORT_H
#define JIFFY_EXPORT_H

#if defined(__GNUC__) || defined(__clang__)
#define JF_API __attribute__((visibility("default")))
#else
#define JF_API
#endif

#endif /* JIFFY_EXPORT_H */

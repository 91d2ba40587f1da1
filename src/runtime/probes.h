/*
 * probes.h - the runtime's USDT probes (provider "jiffy"), for bpftrace, perf and SystemTap.
 *
 * Owns: the probe names and their arguments, which docs/observability.md lists. Each probe is a
 * single nop plus an ELF note (<sys/sdt.h>): nothing runs when no tracer is attached, the
 * arguments are only placed in registers or memory the tracer reads. They have no semaphores,
 * so an argument must be cheap to compute (every one here already sits in a register).
 */
#ifndef JIFFY_PROBES_H
#define JIFFY_PROBES_H

#include <sys/sdt.h>

#define JF_PROBE1(name, a) DTRACE_PROBE1(jiffy, name, a)
#define JF_PROBE2(name, a, b) DTRACE_PROBE2(jiffy, name, a, b)
#define JF_PROBE3(name, a, b, c) DTRACE_PROBE3(jiffy, name, a, b, c)
#define JF_PROBE4(name, a, b, c, d) DTRACE_PROBE4(jiffy, name, a, b, c, d)

#endif /* JIFFY_PROBES_H */

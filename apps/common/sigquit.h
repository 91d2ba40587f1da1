/*
 * sigquit.h - SIGQUIT in the Jiffy servers (jiffy-kv, jiffy-synth): print the uthreads
 * (jf_dump_threads()) and the counters on stderr and go on serving. The servers read their
 * signals from a signalfd in a uthread, so the runtime outlives the call. Header-only: the
 * peers compile apps/common without libjiffy.
 */
#ifndef JP_SIGQUIT_H
#define JP_SIGQUIT_H

#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <sys/signalfd.h>

#include <jiffy/jiffy.h>

/* If @si is SIGQUIT, dump and return true (the caller goes on); false for any other signal. */
static inline bool jp_sigquit_dump(const struct signalfd_siginfo *si)
{
	if (si->ssi_signo != SIGQUIT)
		return false;
	jf_dump_threads(stderr);
	jf_stats_print(stderr);
	return true;
}

#endif /* JP_SIGQUIT_H */

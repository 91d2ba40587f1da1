/*
 * none.c - "none": no preemption. Uthreads run until they yield or block (the baseline every
 * experiment compares against). jf_safepoint() and jf_preempt_disable() still work and cost the
 * same; they just never find a request.
 */
#include "preempt.h"

static int none_available(char *why, size_t len)
{
	(void)why, (void)len;
	return 0;
}

const struct jf_preempt_mech jf_mech_none = {
	.name = "none",
	.available = none_available,
};

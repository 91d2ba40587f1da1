/*
 * driver.c - the policy driver's cold half: setting a policy up and tearing it down.
 *
 * Owns: jf_drv_init() and jf_drv_fini(); everything called per switch is static inline in
 * driver.h, whose head comment describes the driver. The one invariant kept here: @d->flags,
 * @d->can_steal and @d->quantum_ns are derived from the very table and parameters the policy was
 * initialised with, and @d->policy.ops is set only while the policy is initialised (so that
 * jf_drv_fini() after a failed init destroys nothing).
 */
#include <string.h>

#include "driver.h"

int jf_drv_init(struct jf_driver *d, const struct jf_policy_ops *ops,
		const struct jf_policy_params *params)
{
	int rc;

	memset(d, 0, sizeof(*d));
	d->policy.ops = ops;
	d->policy.params = *params; /* ops may read p->params later */
	rc = ops->init(&d->policy, &d->policy.params);
	if (rc) {
		memset(d, 0, sizeof(*d));
		return rc;
	}
	d->flags = ops->flags;
	d->can_steal = ops->balance != NULL && params->nworkers > 1;
	d->quantum_ns = params->quantum_ns;
	return 0;
}

void jf_drv_fini(struct jf_driver *d)
{
	if (d->policy.ops)
		d->policy.ops->destroy(&d->policy);
	d->policy.ops = NULL;
	d->policy.priv = NULL;
}

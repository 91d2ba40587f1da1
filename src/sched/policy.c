/*
 * policy.c - the table of scheduling policies the runtime can select by name.
 *
 * Owns: registration and lookup. Built-in policies are listed in builtin[]; applications may add
 * their own with jf_policy_register() before jf_run(). Lookup is by exact name. A registered
 * policy's parameter table is checked here (params.c), so the configuration can trust it; the
 * built-in tables are checked by test sched.params.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include <jiffy/policy.h>

#include "registry.h"

/* In the order docs/policies.md lists them (jf_policy_names() and error messages use it). */
static const struct jf_policy_ops *const builtin[] = {
#define JF_POLICY(name) &jf_policy_##name,
#include "policies.def"
#undef JF_POLICY
};

#define MAX_REGISTERED 32
static const struct jf_policy_ops *registered[MAX_REGISTERED];
static int nr_registered;
static pthread_mutex_t reg_lock = PTHREAD_MUTEX_INITIALIZER;

const struct jf_policy_ops *jf_policy_find(const char *name)
{
	const struct jf_policy_ops *found = NULL;

	if (!name)
		return NULL;
	for (size_t i = 0; i < sizeof(builtin) / sizeof(builtin[0]); i++)
		if (!strcmp(builtin[i]->name, name))
			return builtin[i];
	pthread_mutex_lock(&reg_lock);
	for (int i = 0; i < nr_registered; i++)
		if (!strcmp(registered[i]->name, name))
			found = registered[i];
	pthread_mutex_unlock(&reg_lock);
	return found;
}

int jf_policy_register(const struct jf_policy_ops *ops)
{
	int rc = 0;

	if (!ops || !ops->name || !ops->name[0] || !ops->init || !ops->destroy || !ops->enqueue ||
	    !ops->pick_next || !ops->has_work || ops->task_data_size > JF_TASK_POLICY_DATA ||
	    jf_policy_params_check(ops, NULL, 0))
		return -EINVAL;
	if (jf_policy_find(ops->name))
		return -EEXIST;
	pthread_mutex_lock(&reg_lock);
	if (nr_registered == MAX_REGISTERED)
		rc = -ENOSPC;
	else
		registered[nr_registered++] = ops;
	pthread_mutex_unlock(&reg_lock);
	return rc;
}

const struct jf_policy_ops *jf_policy_at(int i)
{
	const int nbuiltin = (int)(sizeof(builtin) / sizeof(builtin[0]));
	const struct jf_policy_ops *ops = NULL;

	if (i < 0)
		return NULL;
	if (i < nbuiltin)
		return builtin[i];
	pthread_mutex_lock(&reg_lock);
	if (i - nbuiltin < nr_registered)
		ops = registered[i - nbuiltin];
	pthread_mutex_unlock(&reg_lock);
	return ops;
}

void jf_policy_names(char *buf, size_t len)
{
	size_t off = 0;
	if (!len)
		return;
	buf[0] = '\0';
	for (size_t i = 0; i < sizeof(builtin) / sizeof(builtin[0]); i++)
		off += (size_t)snprintf(buf + off, off < len ? len - off : 0, "%s%s", i ? ", " : "",
					builtin[i]->name);
	pthread_mutex_lock(&reg_lock);
	for (int i = 0; i < nr_registered; i++)
		off += (size_t)snprintf(buf + off, off < len ? len - off : 0, ", %s",
					registered[i]->name);
	pthread_mutex_unlock(&reg_lock);
}

int jf_policy_registry_lookup(const char *name, const struct jf_policy_ops **ops, char *err,
			      size_t errlen)
{
	char names[256];
	*ops = jf_policy_find(name);
	if (*ops)
		return 0;
	jf_policy_names(names, sizeof(names));
	snprintf(err, errlen, "policy '%s' is unknown; available: %s", name, names);
	return -EINVAL;
}

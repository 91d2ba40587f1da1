/*
 * sim/params.c - the simulated policy's parameters: the settings of jiffy-sim's --param (and
 * of the per-parameter flags from before it), their check, and the struct jf_policy_params the
 * engine initialises the policy with.
 *
 * Owns: struct sim_tunables' settings, "[POLICY.]NAME=VALUE". Nothing is parsed here: a value
 * goes through jf_policy_param_set() (src/sched/params.c), the parser JIFFY_<POLICY>_<NAME>
 * goes through in the runtime, so a value means the same in both and the policy's own table
 * says what is allowed. A setting without POLICY is the simulated policy's; one naming another
 * policy is checked against that policy's table and unused (as the runtime treats a variable of
 * a policy not selected).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <jiffy/policy.h>

#include "../src/common/errf.h"
#include "sim.h"

/* "[POLICY.]NAME=VALUE" into its parts (@policy "" without one). Return 0 or -EINVAL. */
static int split(const char *text, char *policy, char *name, const char **value, char *err,
		 size_t errlen)
{
	const char *eq = strchr(text, '='), *dot;
	size_t plen = 0, nlen;

	if (!eq || eq == text)
		return jf_errf(err, errlen, "--param: '%s': expected [POLICY.]NAME=VALUE", text);
	for (dot = eq; dot > text && dot[-1] != '.'; dot--)
		;
	if (dot > text)
		plen = (size_t)(dot - 1 - text);
	nlen = (size_t)(eq - dot);
	if (plen >= JF_POLICY_NAME_MAX || nlen >= JF_PARAM_NAME_MAX || (dot > text && !plen) ||
	    !nlen)
		return jf_errf(err, errlen, "--param: '%s': expected [POLICY.]NAME=VALUE (a policy "
			    "name under %d bytes, a parameter name under %d)", text,
			    JF_POLICY_NAME_MAX, JF_PARAM_NAME_MAX);
	memcpy(policy, text, plen);
	policy[plen] = '\0';
	memcpy(name, dot, nlen);
	name[nlen] = '\0';
	*value = eq + 1;
	return 0;
}

/* Set @text's parameter in @params, @ops being the policy it names (or the simulated one). */
static int apply(const char *text, const char *policy, const struct jf_policy_ops *ops,
		 struct jf_policy_params *params, char *err, size_t errlen)
{
	char pol[JF_POLICY_NAME_MAX], name[JF_PARAM_NAME_MAX], why[512];
	const struct jf_policy_ops *target = ops;
	struct jf_policy_params scratch;
	const char *value;

	if (split(text, pol, name, &value, err, errlen))
		return -EINVAL;
	if (pol[0] && strcmp(pol, policy)) { /* another policy's: checked, unused */
		if (!(target = jf_policy_find(pol)))
			return jf_errf(err, errlen, "--param: '%s': no policy '%s'", text, pol);
		params = &scratch;
		jf_policy_params_default(target, params);
	} else if (!target) {
		return jf_errf(err, errlen, "--param: '%s': policy '%s' takes no parameters", text,
			    policy);
	}
	if (jf_policy_param_set(target, params, name, value, why, sizeof(why)))
		return jf_errf(err, errlen, "--param: %s", why);
	return 0;
}

int sim_param_add(struct sim_config *cfg, const char *text, char *err, size_t errlen)
{
	char pol[JF_POLICY_NAME_MAX], name[JF_PARAM_NAME_MAX];
	const char *value;

	if (cfg->tun.nparams >= SIM_PARAMS_MAX)
		return jf_errf(err, errlen, "--param: '%s': more than %d parameters", text,
			    SIM_PARAMS_MAX);
	if (strlen(text) >= SIM_PARAM_TEXT_MAX)
		return jf_errf(err, errlen, "--param: '%.40s...': longer than %d bytes", text,
			    SIM_PARAM_TEXT_MAX - 1);
	if (split(text, pol, name, &value, err, errlen))
		return -EINVAL;
	if (pol[0]) { /* the policy is named: check the setting now */
		const struct jf_policy_ops *ops = jf_policy_find(pol);
		struct jf_policy_params scratch;

		if (!ops)
			return jf_errf(err, errlen, "--param: '%s': no policy '%s'", text, pol);
		jf_policy_params_default(ops, &scratch);
		if (apply(text, pol, ops, &scratch, err, errlen))
			return -EINVAL;
	}
	snprintf(cfg->tun.param[cfg->tun.nparams++], SIM_PARAM_TEXT_MAX, "%s", text);
	return 0;
}

int sim_policy_params(const struct sim_config *cfg, const struct jf_policy_ops *ops,
		      struct jf_policy_params *params, char *err, size_t errlen)
{
	const char *policy = ops ? ops->name : cfg->policy;

	if (ops)
		jf_policy_params_default(ops, params);
	params->quantum_ns = cfg->tun.quantum_ns;
	for (int i = 0; i < cfg->tun.nparams && i < SIM_PARAMS_MAX; i++)
		if (apply(cfg->tun.param[i], policy, ops, params, err, errlen))
			return -EINVAL;
	return 0;
}

int sim_params_check(const struct sim_config *cfg, char *err, size_t errlen)
{
	const struct jf_policy_ops *ops = jf_policy_find(cfg->policy);
	struct jf_policy_params scratch;

	if (!ops && strcmp(cfg->policy, "ps"))
		return 0; /* the engine refuses an unknown policy, naming the known ones */
	return sim_policy_params(cfg, ops, &scratch, err, errlen);
}

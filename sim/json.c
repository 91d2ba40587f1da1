/*
 * sim/json.c - path lookups in a JSON text (see json.h): a skipping scanner, depth-limited.
 */
#include <stdlib.h>
#include <string.h>

#include "json.h"

#define MAX_DEPTH 64

static const char *skip_ws(const char *p)
{
	while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')
		p++;
	return p;
}

/* @p at '"': the character after the closing quote, or NULL. */
static const char *skip_string(const char *p)
{
	for (p++; *p; p++) {
		if (*p == '\\') {
			if (!p[1])
				return NULL;
			p++;
		} else if (*p == '"') {
			return p + 1;
		}
	}
	return NULL;
}

static const char *skip_value(const char *p, int depth);

/* @p at '{' or '['. */
static const char *skip_container(const char *p, int depth)
{
	char close = *p == '{' ? '}' : ']';
	bool object = *p == '{';

	if (depth > MAX_DEPTH)
		return NULL;
	p = skip_ws(p + 1);
	if (*p == close)
		return p + 1;
	for (;;) {
		if (object) {
			if (*p != '"' || !(p = skip_string(p)))
				return NULL;
			p = skip_ws(p);
			if (*p++ != ':')
				return NULL;
		}
		if (!(p = skip_value(p, depth + 1)))
			return NULL;
		p = skip_ws(p);
		if (*p == close)
			return p + 1;
		if (*p++ != ',')
			return NULL;
		p = skip_ws(p);
	}
}

static const char *skip_value(const char *p, int depth)
{
	char *end;

	p = skip_ws(p);
	switch (*p) {
	case '{':
	case '[':
		return skip_container(p, depth);
	case '"':
		return skip_string(p);
	case 't':
		return strncmp(p, "true", 4) ? NULL : p + 4;
	case 'f':
		return strncmp(p, "false", 5) ? NULL : p + 5;
	case 'n':
		return strncmp(p, "null", 4) ? NULL : p + 4;
	default:
		if (!(*p == '-' || (*p >= '0' && *p <= '9')))
			return NULL;
		strtod(p, &end);
		return end == p ? NULL : end;
	}
}

/* In the object at @p, the value of @key (after its ':'), or NULL. */
static const char *object_get(const char *p, const char *key)
{
	size_t klen = strlen(key);

	p = skip_ws(p);
	if (*p != '{')
		return NULL;
	p = skip_ws(p + 1);
	while (*p == '"') {
		const char *k = p + 1, *after = skip_string(p);
		if (!after)
			return NULL;
		p = skip_ws(after);
		if (*p++ != ':')
			return NULL;
		p = skip_ws(p);
		if ((size_t)(after - 1 - k) == klen && !strncmp(k, key, klen))
			return p;
		if (!(p = skip_value(p, 1)))
			return NULL;
		p = skip_ws(p);
		if (*p != ',')
			return NULL;
		p = skip_ws(p + 1);
	}
	return NULL;
}

static void copy_string(const char *p, char *str, size_t len)
{
	size_t o = 0;

	for (p++; *p && *p != '"' && o + 1 < len; p++) {
		if (*p == '\\' && (p[1] == '"' || p[1] == '\\'))
			p++;
		str[o++] = *p;
	}
	str[o] = '\0';
}

enum sim_json_type sim_json_get(const char *doc, const char *const *path, int n, double *num,
				bool *flag, char *str, size_t strlen)
{
	const char *p = doc;

	for (int i = 0; i < n && p; i++)
		p = object_get(p, path[i]);
	if (!p || !skip_value(p, 1))
		return SIM_JSON_MISSING;
	p = skip_ws(p);
	switch (*p) {
	case 'n':
		return SIM_JSON_NULL;
	case 't':
	case 'f':
		if (flag)
			*flag = *p == 't';
		return SIM_JSON_BOOL;
	case '"':
		if (str && strlen)
			copy_string(p, str, strlen);
		return SIM_JSON_STRING;
	case '{':
	case '[':
		return SIM_JSON_OTHER;
	default:
		if (num)
			*num = strtod(p, NULL);
		return SIM_JSON_NUMBER;
	}
}

bool sim_json_valid(const char *doc)
{
	const char *p = skip_value(doc, 0);
	return p && *skip_ws(p) == '\0';
}

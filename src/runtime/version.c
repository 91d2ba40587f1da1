/*
 * runtime/version.c - jf_version(): the version this library was built as (include/jiffy/jiffy.h).
 */
#include <jiffy/jiffy.h>

const char *jf_version(int *number)
{
	if (number)
		*number = JIFFY_VERSION_NUMBER;
	return JIFFY_VERSION;
}

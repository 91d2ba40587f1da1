/*
 * tests/core/test_version.c - the version is one number everywhere: jf_version() (the library)
 * equals JIFFY_VERSION (the headers), whose parts are the three macros, and equals the version
 * CMake read from the header (passed as JFT_CMAKE_VERSION). No runtime needed.
 */
#include <stdio.h>
#include <string.h>

#include <jiffy/jiffy.h>

#include "jf_test.h"

int main(void)
{
	char parts[32];
	int number = -1;
	const char *v = jf_version(&number);

	snprintf(parts, sizeof(parts), "%d.%d.%d", JIFFY_VERSION_MAJOR, JIFFY_VERSION_MINOR,
		 JIFFY_VERSION_PATCH);
	printf("core.version: library %s (%d), headers %s, CMake %s\n", v, number, JIFFY_VERSION,
	       JFT_CMAKE_VERSION);
	CHECK(strcmp(v, JIFFY_VERSION) == 0);
	CHECK(strcmp(v, parts) == 0);
	CHECK(strcmp(v, JFT_CMAKE_VERSION) == 0);
	CHECK_EQ(number, JIFFY_VERSION_NUMBER);
	CHECK_EQ(number, JIFFY_VERSION_MAJOR * 10000 + JIFFY_VERSION_MINOR * 100 + JIFFY_VERSION_PATCH);
	CHECK(jf_version(NULL) == v);
	return 0;
}

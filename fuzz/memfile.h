/*
 * fuzz/memfile.h - a file whose contents are the fuzz input, for the parsers that take a path
 * (jiffy-sim's --dist file: and --arrivals): one memfd per process, rewritten for every input and
 * named by its /proc/self/fd path, so no input touches the disk or any other file.
 */
#ifndef JIFFY_FUZZ_MEMFILE_H
#define JIFFY_FUZZ_MEMFILE_H

#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

/* Make the memfd hold @data (@size bytes); return its path (static storage). Aborts on error. */
static inline const char *memfile_set(const uint8_t *data, size_t size)
{
	static int fd = -1;
	static char path[64];

	if (fd < 0) {
		fd = memfd_create("jiffy-fuzz", MFD_CLOEXEC);
		if (fd < 0) {
			perror("memfd_create");
			abort();
		}
		snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	}
	if (ftruncate(fd, 0) != 0 || (size && pwrite(fd, data, size, 0) != (ssize_t)size)) {
		perror("memfile");
		abort();
	}
	return path;
}

#endif /* JIFFY_FUZZ_MEMFILE_H */

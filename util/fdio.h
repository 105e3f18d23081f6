/* fdio.h: whole reads and writes on file descriptors (pipes to compile
 * workers), retried on EINTR and short counts. */
#ifndef TILEC_UTIL_FDIO_H
#define TILEC_UTIL_FDIO_H

#include <stddef.h>

int fdio_write_all(int fd, const void *buf, size_t n); /* 0, or -1 (errno says why) */
int fdio_read_all(int fd, void *buf, size_t n);        /* 0, or -1 on error or end of file */

#endif

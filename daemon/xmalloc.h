/* xmalloc.h: allocation that never returns NULL; running out of memory is fatal in nkid. */
#ifndef NKID_XMALLOC_H
#define NKID_XMALLOC_H

#include <stddef.h>

/* Like malloc, calloc, realloc and strdup, but fatal() instead of NULL.
 * Memory is freed with free(). xcalloc and xreallocarray check n * size
 * for overflow. */
void	*xmalloc(size_t size);
void	*xcalloc(size_t n, size_t size);
void	*xreallocarray(void *p, size_t n, size_t size);
char	*xstrdup(const char *s);
/* vasprintf into a new string the caller frees. */
char	*xasprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif /* NKID_XMALLOC_H */

/* xmalloc.c: allocation wrappers that turn out-of-memory into fatal(). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/log.h"
#include "daemon/xmalloc.h"

void *
xmalloc(size_t size)
{
	void	*p;

	if ((p = malloc(size == 0 ? 1 : size)) == NULL)
		fatal("out of memory allocating %zu bytes", size);
	return (p);
}

void *
xcalloc(size_t n, size_t size)
{
	void	*p;

	if (n == 0 || size == 0)
		n = size = 1;
	if ((p = calloc(n, size)) == NULL)
		fatal("out of memory allocating %zu x %zu bytes", n, size);
	return (p);
}

void *
xreallocarray(void *p, size_t n, size_t size)
{
	void	*q;

	if (size != 0 && n > (size_t)-1 / size)
		fatal("allocation of %zu x %zu bytes overflows", n, size);
	if (n == 0 || size == 0)
		n = size = 1;
	if ((q = realloc(p, n * size)) == NULL)
		fatal("out of memory allocating %zu x %zu bytes", n, size);
	return (q);
}

char *
xstrdup(const char *s)
{
	char	*p;

	if ((p = strdup(s)) == NULL)
		fatal("out of memory copying a string of %zu bytes", strlen(s));
	return (p);
}

char *
xasprintf(const char *fmt, ...)
{
	va_list	 ap;
	char	*s;
	int	 n;

	va_start(ap, fmt);
	n = vasprintf(&s, fmt, ap);
	va_end(ap);
	if (n < 0)
		fatal("out of memory formatting a string");
	return (s);
}

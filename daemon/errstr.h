/* errstr.h: the words of a module's error codes, kept in a table that 0 and the negative codes index (backend_strerror, sched_strerror, ...). */
#ifndef NKID_ERRSTR_H
#define NKID_ERRSTR_H

#include <stddef.h>

/* The words of err (0 or a negative code) in table t of n entries;
 * "unknown error" for any other code. */
static inline const char *
errstr_lookup(const char *const *t, size_t n, int err)
{
	if (err > 0 || (size_t)-(long)err >= n)
		return ("unknown error");
	return (t[-err]);
}

/* errstr_lookup in t, an array. */
#define ERRSTR(t, err)	errstr_lookup((t), sizeof(t) / sizeof((t)[0]), (err))

#endif /* NKID_ERRSTR_H */

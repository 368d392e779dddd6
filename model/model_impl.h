/* model_impl.h: what the model's files share: a growing text buffer for the reports. */
#ifndef NKID_MODEL_IMPL_H
#define NKID_MODEL_IMPL_H

#include <stddef.h>

/* A growing NUL-terminated text buffer; s is malloc'd. */
struct model_buf_text {
	char	*s;
	size_t	 len;
	size_t	 cap;
	int	 oom;		/* an allocation failed: s is incomplete */
};

/* Append printf-style text to b. */
void	model_text_printf(struct model_buf_text *b, const char *fmt, ...)
	    __attribute__((format(printf, 2, 3)));
/* Append s as the body of a JSON string (quotes excluded). */
void	model_text_json(struct model_buf_text *b, const char *s);

#endif /* NKID_MODEL_IMPL_H */

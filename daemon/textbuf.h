/* textbuf.h: a bounded text buffer that one thread appends to (device_print output), marked when it overflows. */
#ifndef NKID_TEXTBUF_H
#define NKID_TEXTBUF_H

#include <stddef.h>

struct textbuf {
	char		*text;		/* NUL-terminated, NULL while empty */
	size_t		 len;
	size_t		 cap;
	size_t		 max;		/* most bytes kept */
	const char	*mark;		/* appended when text was dropped */
	int		 truncated;
};

/* Start an empty buffer of at most max bytes; mark (static) is added to
 * the text when more was appended than fits. */
void	textbuf_init(struct textbuf *tb, size_t max, const char *mark);
/* Append len bytes of text (a backend print callback: arg is the
 * textbuf). Past max nothing more is kept. */
void	textbuf_append_cb(void *arg, const char *text, size_t len);
/* The text with the mark if truncated; "" when empty. Valid until the
 * next call on tb. */
const char *textbuf_text(struct textbuf *tb);
void	textbuf_release(struct textbuf *tb);

#endif /* NKID_TEXTBUF_H */

/* textbuf.c: a bounded text buffer that one thread appends to, marked when it overflows. */
#include <stdlib.h>
#include <string.h>

#include "daemon/textbuf.h"
#include "daemon/xmalloc.h"

void
textbuf_init(struct textbuf *tb, size_t max, const char *mark)
{
	memset(tb, 0, sizeof *tb);
	tb->max = max;
	tb->mark = mark != NULL ? mark : "";
}

void
textbuf_append_cb(void *arg, const char *text, size_t len)
{
	struct textbuf	*tb = arg;
	size_t		 want;

	if (tb->truncated)
		return;
	if (len > tb->max - tb->len) {
		tb->truncated = 1;
		return;
	}
	want = tb->len + len + 1;
	if (want > tb->cap) {
		tb->cap = want < 4096 ? 4096 : want * 2;
		if (tb->cap > tb->max + 1)
			tb->cap = tb->max + 1;
		tb->text = xreallocarray(tb->text, 1, tb->cap);
	}
	memcpy(tb->text + tb->len, text, len);
	tb->len += len;
	tb->text[tb->len] = '\0';
}

const char *
textbuf_text(struct textbuf *tb)
{
	size_t	n;

	if (tb->truncated && tb->mark[0] != '\0') {
		n = strlen(tb->mark);
		tb->text = xreallocarray(tb->text, 1, tb->len + n + 1);
		memcpy(tb->text + tb->len, tb->mark, n + 1);
		tb->len += n;
		tb->mark = "";
	}
	return (tb->text != NULL ? tb->text : "");
}

void
textbuf_release(struct textbuf *tb)
{
	free(tb->text);
	memset(tb, 0, sizeof *tb);
}

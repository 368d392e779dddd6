/* cache_text.c: the text an entry holds (names, logs) is valid UTF-8: checked where it comes in, and made so where it cannot be refused (a compiler's log). */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cache/cache.h"

/* Bytes of the well-formed UTF-8 sequence at p (no overlong form, no
 * surrogate, nothing past U+10FFFF), of at most n bytes; 0 if it is not
 * one. */
static size_t
cache_text_seq(const unsigned char *p, size_t n)
{
	size_t		len, i;
	uint32_t	cp;

	if (p[0] < 0x80)
		return (1);
	if ((p[0] & 0xe0) == 0xc0) {
		len = 2;
		cp = p[0] & 0x1f;
	} else if ((p[0] & 0xf0) == 0xe0) {
		len = 3;
		cp = p[0] & 0x0f;
	} else if ((p[0] & 0xf8) == 0xf0) {
		len = 4;
		cp = p[0] & 0x07;
	} else
		return (0);
	if (len > n)
		return (0);
	for (i = 1; i < len; i++) {
		if ((p[i] & 0xc0) != 0x80)
			return (0);
		cp = (cp << 6) | (p[i] & 0x3f);
	}
	if ((len == 2 && cp < 0x80) || (len == 3 && cp < 0x800) ||
	    (len == 4 && cp < 0x10000) || cp > 0x10ffff ||
	    (cp >= 0xd800 && cp <= 0xdfff))
		return (0);
	return (len);
}

int
cache_text_valid(const char *s, size_t n)
{
	const unsigned char	*p = (const unsigned char *)s;
	size_t			 i, len;

	for (i = 0; i < n; i += len) {
		if (p[i] == '\0' || (len = cache_text_seq(p + i, n - i)) == 0)
			return (0);
	}
	return (1);
}

char *
cache_text_clean(const char *s, size_t max)
{
	const unsigned char	*p = (const unsigned char *)s;
	size_t			 n = strlen(s), i, o = 0, len;
	char			*out;

	/* At worst every byte becomes "\xNN". */
	if ((out = malloc(n * 4 + 1)) == NULL)
		return (NULL);
	for (i = 0; i < n; i += len) {
		if ((len = cache_text_seq(p + i, n - i)) == 0) {
			if (o + 4 > max)
				break;
			snprintf(out + o, 5, "\\x%02x", p[i]);
			o += 4;
			len = 1;
			continue;
		}
		if (o + len > max)
			break;
		memcpy(out + o, p + i, len);
		o += len;
	}
	out[o] = '\0';
	return (out);
}

/* wire_strings.c: every string field of a message, at any depth, checked on the wire before it is unpacked: UTF-8 (as proto3 says and protobuf-c does not check), and no NUL byte (protobuf-c's C strings would end there: "float32\0junk" read as "float32"). */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <protobuf-c/protobuf-c.h>

#include "cache/cache.h"
#include "proto/wire.h"

/* Deeper than any message of nkid.proto nests. */
#define WIRE_STRINGS_DEPTH	16

/* A varint at *p (before end) into *v; -1 if it does not end in time. */
static int
wire_strings_varint(const uint8_t **p, const uint8_t *end, uint64_t *v)
{
	unsigned	shift = 0;

	*v = 0;
	while (*p < end && shift < 64) {
		*v |= (uint64_t)(**p & 0x7f) << shift;
		if ((*(*p)++ & 0x80) == 0)
			return (0);
		shift += 7;
	}
	return (-1);
}

static int
wire_strings_walk(const ProtobufCMessageDescriptor *d, const uint8_t *p,
    const uint8_t *end, int depth, char *why, size_t whylen)
{
	const ProtobufCFieldDescriptor	*f;
	uint64_t			 tag, len;

	if (depth > WIRE_STRINGS_DEPTH)
		return (0);	/* protobuf-c unpacked it: nothing to add */
	while (p < end) {
		if (wire_strings_varint(&p, end, &tag) != 0)
			return (-1);
		switch (tag & 7) {
		case 0:
			if (wire_strings_varint(&p, end, &len) != 0)
				return (-1);
			continue;
		case 1:
			if (end - p < 8)
				return (-1);
			p += 8;
			continue;
		case 5:
			if (end - p < 4)
				return (-1);
			p += 4;
			continue;
		case 2:
			break;
		default:
			return (-1);
		}
		if (wire_strings_varint(&p, end, &len) != 0 ||
		    len > (uint64_t)(end - p))
			return (-1);
		f = protobuf_c_message_descriptor_get_field(d,
		    (unsigned)(tag >> 3));
		if (f != NULL && f->type == PROTOBUF_C_TYPE_STRING) {
			if (memchr(p, '\0', len) != NULL) {
				snprintf(why, whylen, "field '%s.%s' holds a "
				    "NUL byte", d->short_name, f->name);
				return (-1);
			}
			if (!cache_text_valid((const char *)p, len)) {
				snprintf(why, whylen, "field '%s.%s' is not "
				    "valid UTF-8", d->short_name, f->name);
				return (-1);
			}
		} else if (f != NULL && f->type == PROTOBUF_C_TYPE_MESSAGE &&
		    wire_strings_walk(f->descriptor, p, p + len, depth + 1,
		    why, whylen) != 0)
			return (-1);
		p += len;
	}
	return (0);
}

int
wire_strings_check(const ProtobufCMessageDescriptor *d,
    const uint8_t *data, size_t len, char *why, size_t whylen)
{
	why[0] = '\0';
	if (len == 0)
		return (0);
	if (wire_strings_walk(d, data, data + len, 0, why, whylen) != 0 &&
	    why[0] != '\0')
		return (-1);
	return (0);
}

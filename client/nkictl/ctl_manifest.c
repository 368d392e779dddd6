/* ctl_manifest.c: kernel manifests read, with every kernel file they name and the target and options they give. */
#include <assert.h>
#include <errno.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cjson/cJSON.h>

#include "ctl_kernel.h"
#include "ctl_manifest.h"

/* A copy of the string member name of o, or NULL. */
static char *
ctl_manifest_str(const cJSON *o, const char *name)
{
	const cJSON	*v = cJSON_GetObjectItemCaseSensitive(o, name);
	char		*s;

	if (!cJSON_IsString(v))
		return (NULL);
	if ((s = strdup(v->valuestring)) == NULL)
		abort();
	return (s);
}

/* The JSON object in the file at path, or NULL with err set. */
static cJSON *
ctl_manifest_parse(const char *path, char *err, size_t errlen)
{
	cJSON		*root = NULL;
	char		*text = NULL;
	const char	*end = NULL, *p;
	struct stat	 st;
	unsigned	 line, col;
	FILE		*f;

	if ((f = fopen(path, "re")) == NULL || fstat(fileno(f), &st) == -1) {
		snprintf(err, errlen, "cannot read manifest '%s': %s", path,
		    strerror(errno));
		goto out;
	}
	if ((unsigned long long)st.st_size > CTL_MANIFEST_MAX_BYTES) {
		snprintf(err, errlen, "manifest '%s' is larger than %u bytes",
		    path, CTL_MANIFEST_MAX_BYTES);
		goto out;
	}
	if ((text = calloc(1, st.st_size + 1)) == NULL)
		abort();
	if (fread(text, 1, st.st_size, f) != (size_t)st.st_size) {
		snprintf(err, errlen, "cannot read manifest '%s'", path);
		goto out;
	}
	if ((root = cJSON_ParseWithLengthOpts(text, st.st_size, &end,
	    0)) == NULL) {
		for (p = text, line = 1, col = 1; p < end && *p != '\0'; p++) {
			if (*p == '\n') {
				line++;
				col = 1;
			} else
				col++;
		}
		snprintf(err, errlen, "manifest '%s' is not valid JSON: "
		    "error at line %u, column %u%s", path, line, col,
		    strchr(end != NULL ? end : text, '\n') == NULL ?
		    " (on its last line: is it cut short?)" : "");
	} else if (!cJSON_IsObject(root)) {
		snprintf(err, errlen, "manifest '%s' is not a JSON object",
		    path);
		cJSON_Delete(root);
		root = NULL;
	}
out:
	free(text);
	if (f != NULL)
		fclose(f);
	return (root);
}

/*
 * Fill it from k, the manifest's entry: a path, or an object with a path
 * and maybe a target and options (else gtarget and goptions, the
 * manifest's). Relative paths are relative to dir. Returns 0, or -1 with
 * err set.
 */
static int
ctl_manifest_item_read(struct ctl_manifest_item *it, const cJSON *k,
    const char *dir, const char *gtarget, const char *goptions, char *err,
    size_t errlen)
{
	const cJSON	*p = cJSON_IsObject(k) ?
			    cJSON_GetObjectItemCaseSensitive(k, "path") : k;

	if (!cJSON_IsString(p)) {
		snprintf(err, errlen, "neither a path nor an object with a "
		    "'path'");
		return (-1);
	}
	if (p->valuestring[0] == '/')
		it->path = strdup(p->valuestring);
	else if (asprintf(&it->path, "%s/%s", dir, p->valuestring) < 0)
		it->path = NULL;
	if (it->path == NULL)
		abort();
	if (cJSON_IsObject(k)) {
		it->target = ctl_manifest_str(k, "target");
		it->options = ctl_manifest_str(k, "options");
	}
	if (it->target == NULL && gtarget != NULL &&
	    (it->target = strdup(gtarget)) == NULL)
		abort();
	if (it->options == NULL && goptions != NULL &&
	    (it->options = strdup(goptions)) == NULL)
		abort();
	return (ctl_kernel_read(it->path, &it->ref, err, errlen));
}

/* ctl_manifest_read, or with all set ctl_manifest_read_all. */
static int
ctl_manifest_load(const char *path, struct ctl_manifest *m, int all,
    char *err, size_t errlen)
{
	struct ctl_manifest_item	*it;
	cJSON	*root, *ks, *k;
	char	*gtarget, *goptions, *dircopy, *dir, kerr[1024];
	int	 rc = -1;

	memset(m, 0, sizeof *m);
	if ((root = ctl_manifest_parse(path, err, errlen)) == NULL)
		return (-1);
	ks = cJSON_GetObjectItemCaseSensitive(root, "kernels");
	if (!cJSON_IsArray(ks) || cJSON_GetArraySize(ks) == 0) {
		snprintf(err, errlen, "manifest '%s': 'kernels' must be a "
		    "non-empty array", path);
		cJSON_Delete(root);
		return (-1);
	}
	gtarget = ctl_manifest_str(root, "target");
	goptions = ctl_manifest_str(root, "options");
	if ((dircopy = strdup(path)) == NULL)
		abort();
	dir = dirname(dircopy);
	m->items = calloc(cJSON_GetArraySize(ks), sizeof *m->items);
	if (m->items == NULL)
		abort();
	cJSON_ArrayForEach(k, ks) {
		it = &m->items[m->n++];
		if (ctl_manifest_item_read(it, k, dir, gtarget, goptions, kerr,
		    sizeof kerr) == 0)
			continue;
		if (!all || it->path == NULL) {
			snprintf(err, errlen, "manifest '%s': kernel %zu: %s",
			    path, m->n, kerr);
			goto out;
		}
		ctl_kernel_free(it->ref);
		it->ref = NULL;
		if ((it->err = strdup(kerr)) == NULL)
			abort();
		m->unreadable++;
	}
	rc = 0;
out:
	if (rc != 0)
		ctl_manifest_release(m);
	free(gtarget);
	free(goptions);
	free(dircopy);
	cJSON_Delete(root);
	return (rc);
}

int
ctl_manifest_read(const char *path, struct ctl_manifest *m, char *err,
    size_t errlen)
{
	return (ctl_manifest_load(path, m, 0, err, errlen));
}

int
ctl_manifest_read_all(const char *path, struct ctl_manifest *m, char *err,
    size_t errlen)
{
	return (ctl_manifest_load(path, m, 1, err, errlen));
}

void
ctl_manifest_release(struct ctl_manifest *m)
{
	size_t	i;

	for (i = 0; i < m->n; i++) {
		free(m->items[i].path);
		free(m->items[i].target);
		free(m->items[i].options);
		free(m->items[i].err);
		ctl_kernel_free(m->items[i].ref);
	}
	free(m->items);
	memset(m, 0, sizeof *m);
}

void
ctl_manifest_ref(const struct ctl_manifest *m, size_t i,
    Nkid__V1__KernelRef *ref)
{
	const struct ctl_manifest_item	*it = &m->items[i];

	nkid__v1__kernel_ref__init(ref);
	ref->kernel = it->ref->kernel;
	ref->target = it->target != NULL ? it->target : it->ref->target;
	ref->options = it->options != NULL ? it->options : it->ref->options;
}

int
ctl_manifest_send(struct ctl_ctx *ctx, const char *method,
    ProtobufCMessage *req, const ProtobufCMessageDescriptor *reply_desc,
    ProtobufCMessage **items, size_t n, size_t batch,
    void (*fn)(struct ctl_ctx *, const ProtobufCMessage *, size_t, size_t,
    void *), void *arg)
{
	const ProtobufCFieldDescriptor	*f;
	ProtobufCMessage		*r;
	size_t				 i, count;
	int				 rc;

	f = protobuf_c_message_descriptor_get_field_by_name(req->descriptor,
	    "items");
	assert(f != NULL && f->label == PROTOBUF_C_LABEL_REPEATED);
	assert(batch > 0);
	for (i = 0; i < n; i += count) {
		count = n - i < batch ? n - i : batch;
		*(size_t *)((char *)req + f->quantifier_offset) = count;
		*(ProtobufCMessage ***)((char *)req + f->offset) = items + i;
		if ((rc = ctl_call(ctx, method, req, reply_desc, &r)) !=
		    CTL_EXIT_OK)
			return (rc);
		fn(ctx, r, i, count, arg);
		protobuf_c_message_free_unpacked(r, NULL);
	}
	return (CTL_EXIT_OK);
}

/*
 * fuzz_bundle.c: libFuzzer target for cache bundles: verify the bytes
 * (cache_bundle_verify_fd) and import them all or nothing into a real
 * cache (cache_bundle_import_fd); what verifies must import, what imports
 * must export again to a bundle that verifies. Imported entries are
 * removed after each input so every input meets the same cache.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "cache/cache.h"
#include "tests/fuzz/fuzz_tmp.h"

int	LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct cache	*fuzz_bundle_cache;

struct fuzz_bundle_keys {
	char	(*key)[CACHE_KEY_LEN + 1];
	size_t	  n;
};

static void
fuzz_bundle_open(void)
{
	struct cache_opts	 o;
	char			 err[1024];

	memset(&o, 0, sizeof o);
	o.dir = fuzz_tmp_make("bundle");
	o.max_bytes = 64u << 20;
	o.backend = "cpu";
	o.compiler_version = "sim nkir/1";
	o.inline_max = 256;	/* small blobs in files too: both paths */
	if (cache_open(&fuzz_bundle_cache, &o, err, sizeof err) != 0) {
		fprintf(stderr, "fuzz_bundle: %s\n", err);
		abort();
	}
}

static int
fuzz_bundle_key_cb(void *arg, const struct cache_entry *e)
{
	struct fuzz_bundle_keys	*k = arg;

	k->key = realloc(k->key, (k->n + 1) * sizeof(*k->key));
	if (k->key == NULL)
		abort();
	memcpy(k->key[k->n++], e->key, CACHE_KEY_LEN + 1);
	return (0);
}

static int
fuzz_bundle_write_cb(void *arg, const void *p, size_t n)
{
	int	fd = *(int *)arg;

	return (write(fd, p, n) == (ssize_t)n ? 0 : -1);
}

/* Export everything, verify it, then empty the cache. */
static void
fuzz_bundle_export_and_empty(unsigned imported)
{
	struct fuzz_bundle_keys	 k = { NULL, 0 };
	unsigned		 count, vcount;
	char			 err[1024];
	size_t			 i;
	int			 fd;

	if ((fd = memfd_create("fuzz-export", 0)) == -1)
		abort();
	if (cache_bundle_export(fuzz_bundle_cache, CACHE_VIEW_ALL, NULL, 0, 0,
	    fuzz_bundle_write_cb, &fd, &count, err, sizeof err) != 0) {
		fprintf(stderr, "fuzz_bundle: export failed: %s\n", err);
		abort();
	}
	if (cache_bundle_verify_fd(fd, "export", &vcount, err,
	    sizeof err) != 0 || vcount != count || count < imported) {
		fprintf(stderr, "fuzz_bundle: the export of an import does "
		    "not verify (%u of %u): %s\n", vcount, count, err);
		abort();
	}
	close(fd);
	cache_list(fuzz_bundle_cache, NULL, 0, fuzz_bundle_key_cb, &k);
	for (i = 0; i < k.n; i++)
		cache_remove(fuzz_bundle_cache, k.key[i]);
	free(k.key);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	unsigned	count = 0, imported, skipped;
	char		err[1024];
	int		fd, vrc, irc;

	if (fuzz_bundle_cache == NULL)
		fuzz_bundle_open();
	if ((fd = memfd_create("fuzz-bundle", 0)) == -1)
		abort();
	if (size > 0 && write(fd, data, size) != (ssize_t)size)
		abort();
	err[0] = '\0';
	vrc = cache_bundle_verify_fd(fd, "fuzz", &count, err, sizeof err);
	if (vrc != 0 && strstr(err, "'fuzz'") == NULL) {
		fprintf(stderr, "fuzz_bundle: message does not name the "
		    "bundle: '%s'\n", err);
		abort();
	}
	irc = cache_bundle_import_fd(fuzz_bundle_cache, fd, "fuzz",
	    CACHE_OWNER_NONE, NULL, &imported, &skipped, err, sizeof err);
	close(fd);
	if ((vrc == 0) != (irc == 0)) {
		fprintf(stderr, "fuzz_bundle: verify says %d, import %d (%s)\n",
		    vrc, irc, err);
		abort();
	}
	if (irc == 0) {
		if (imported + skipped != count)
			abort();
		fuzz_bundle_export_and_empty(imported);
	}
	return (0);
}

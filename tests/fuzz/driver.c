/*
 * driver.c: a plain main() for libFuzzer targets: runs the target over
 * every file named on the command line (directories are walked), then over
 * deterministic mutations of each (bit flips, truncations, splices).
 */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define DRIVER_MUTATIONS    2000
#define DRIVER_FILE_MAX     (8u << 20)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

struct driver_input {
	uint8_t *data;
	size_t len;
};

static struct driver_input *driver_inputs;
static size_t driver_ninputs;

static uint64_t driver_rng = 0x9e3779b97f4a7c15ull;

static uint64_t
driver_rand(void)
{
	driver_rng ^= driver_rng << 13;
	driver_rng ^= driver_rng >> 7;
	driver_rng ^= driver_rng << 17;
	return driver_rng;
}

static void
driver_add_file(const char *path)
{
	struct driver_input *in;
	FILE *f = fopen(path, "rb");
	uint8_t *buf;
	size_t n;

	if (f == NULL) {
		fprintf(stderr, "driver: cannot open '%s'\n", path);
		exit(2);
	}
	buf = malloc(DRIVER_FILE_MAX);
	if (buf == NULL)
		exit(2);
	n = fread(buf, 1, DRIVER_FILE_MAX, f);
	fclose(f);
	in = realloc(driver_inputs, (driver_ninputs + 1) * sizeof(*in));
	if (in == NULL)
		exit(2);
	driver_inputs = in;
	driver_inputs[driver_ninputs].data = buf;
	driver_inputs[driver_ninputs].len = n;
	driver_ninputs++;
}

static void
driver_add_path(const char *path)
{
	struct dirent *de;
	struct stat st;
	char sub[4096];
	DIR *d;

	if (stat(path, &st) != 0) {
		fprintf(stderr, "driver: cannot stat '%s'\n", path);
		exit(2);
	}
	if (!S_ISDIR(st.st_mode)) {
		driver_add_file(path);
		return;
	}
	d = opendir(path);
	if (d == NULL)
		exit(2);
	while ((de = readdir(d)) != NULL) {
		if (de->d_name[0] == '.')
			continue;
		snprintf(sub, sizeof(sub), "%s/%s", path, de->d_name);
		driver_add_path(sub);
	}
	closedir(d);
}

static void
driver_mutate(const struct driver_input *in, uint8_t *buf, size_t *len)
{
	size_t n = in->len;

	memcpy(buf, in->data, n);
	switch (driver_rand() % 4) {
	case 0:         /* bit flips */
		for (int k = 1 + (int)(driver_rand() % 4); k > 0 && n; k--)
			buf[driver_rand() % n] ^= (uint8_t)(1u << (driver_rand() % 8));
		break;
	case 1:         /* truncation */
		n = n ? driver_rand() % n : 0;
		break;
	case 2: {       /* splice with another input */
		const struct driver_input *o =
		    &driver_inputs[driver_rand() % driver_ninputs];
		size_t at = n ? driver_rand() % n : 0;
		size_t from = o->len ? driver_rand() % o->len : 0;
		size_t take = o->len - from;

		if (at + take > 2 * DRIVER_FILE_MAX)
			take = 0;
		memcpy(buf + at, o->data + from, take);
		n = at + take;
		break;
	}
	default:        /* byte set to an interesting value */
		if (n) {
			static const uint8_t v[] = { 0, 1, 0x7f, 0x80, 0xff };

			buf[driver_rand() % n] = v[driver_rand() % sizeof(v)];
		}
		break;
	}
	*len = n;
}

int
main(int argc, char **argv)
{
	uint8_t *buf = malloc(2 * DRIVER_FILE_MAX);
	size_t runs = 0, len;

	if (buf == NULL)
		return 2;
	for (int i = 1; i < argc; i++)
		driver_add_path(argv[i]);
	for (size_t i = 0; i < driver_ninputs; i++) {
		LLVMFuzzerTestOneInput(driver_inputs[i].data,
		    driver_inputs[i].len);
		runs++;
	}
	for (size_t i = 0; i < driver_ninputs; i++)
		for (int m = 0; m < DRIVER_MUTATIONS; m++) {
			driver_mutate(&driver_inputs[i], buf, &len);
			LLVMFuzzerTestOneInput(buf, len);
			runs++;
		}
	printf("driver: %zu inputs, %zu runs, no crash\n", driver_ninputs, runs);
	for (size_t i = 0; i < driver_ninputs; i++)
		free(driver_inputs[i].data);
	free(driver_inputs);
	free(buf);
	return 0;
}

/* nkimodel.c: model a saved kernel on a NeuronCore without executing it: validate and plan it (sim), then cost it (model). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "nkid.pb-c.h"
#include "sim/sim.h"

#include "model/model.h"

#define NKIMODEL_MAX_FILE	(256u << 20)
#define NKIMODEL_EVENTS		200000

static void
nkimodel_usage(void)
{
	fprintf(stderr, "usage: nkimodel [-jU] [-t target] [-o trace.json] "
	    "kernel.nkir\n");
	exit(2);
}

/* -h, --help: what it does and its options, on stdout. */
static void
nkimodel_help(void)
{
	printf("usage: nkimodel [-j] [-t target] [-o trace.json] kernel.nkir\n"
	    "Model a traced kernel (python -m nkid.trace ... -o F.nkir) on a\n"
	    "NeuronCore without executing it: validate, plan, then cost it\n"
	    "(docs/model.md).\n"
	    "  -j            print the summary as JSON\n"
	    "  -t target     the NeuronCore to model (trn1, inf2, trn2; "
	    "default the kernel's, else trn1)\n"
	    "  -o FILE       write the per-engine timeline as a Chrome trace\n"
	    "  -h, --help    this help\n");
	exit(0);
}

/* The whole file at path (malloc'd); exits with a message on failure. */
static unsigned char *
nkimodel_read(const char *path, size_t *len)
{
	unsigned char	*buf = NULL;
	size_t		 n = 0, cap = 0, r;
	FILE		*f;

	if ((f = fopen(path, "rb")) == NULL) {
		fprintf(stderr, "nkimodel: cannot open '%s': %s\n", path,
		    strerror(errno));
		exit(1);
	}
	for (;;) {
		if (n == cap) {
			cap = cap ? cap * 2 : 65536;
			if (cap > NKIMODEL_MAX_FILE || (buf = realloc(buf,
			    cap)) == NULL) {
				fprintf(stderr, "nkimodel: '%s' is too large\n",
				    path);
				exit(1);
			}
		}
		if ((r = fread(buf + n, 1, cap - n, f)) == 0)
			break;
		n += r;
	}
	if (ferror(f)) {
		fprintf(stderr, "nkimodel: cannot read '%s'\n", path);
		exit(1);
	}
	fclose(f);
	*len = n;
	return (buf);
}

static void
nkimodel_write(const char *path, const char *s, size_t len)
{
	FILE	*f;

	if ((f = fopen(path, "wb")) == NULL || fwrite(s, 1, len, f) != len ||
	    fclose(f) != 0) {
		fprintf(stderr, "nkimodel: cannot write '%s': %s\n", path,
		    strerror(errno));
		exit(1);
	}
}

int
main(int argc, char **argv)
{
	Nkid__V1__KernelRef	*ref = NULL;
	struct model_opts	 o;
	struct model_result	 r;
	struct sim_program		*sp = NULL;
	struct sim_diag		 sd;
	unsigned char		*file;
	const void		*ir, *pir;
	void			*image = NULL;
	size_t			 len, irlen, image_len, plen, tlen, slen;
	const char		*target = NULL, *out = NULL, *name;
	char			*trace, *summary, diag[1024];
	int			 ch, json = 0, unfitted = 0, err;

	if (argc > 1 && strcmp(argv[1], "--help") == 0)
		nkimodel_help();
	while ((ch = getopt(argc, argv, "hjo:t:U")) != -1) {
		switch (ch) {
		case 'h':
			nkimodel_help();
			break;
		case 'j':
			json = 1;
			break;
		case 'o':
			out = optarg;
			break;
		case 't':
			target = optarg;
			break;
		case 'U':
			unfitted = 1;
			break;
		default:
			nkimodel_usage();
		}
	}
	if (optind + 1 != argc)
		nkimodel_usage();
	file = nkimodel_read(argv[optind], &len);
	ir = file;
	irlen = len;
	/* A saved kernel (python -m nkid.trace), or bare NKIR. */
	if (len >= 8 && memcmp(file, "NKIDKRF1", 8) == 0) {
		ref = nkid__v1__kernel_ref__unpack(NULL, len - 8, file + 8);
		if (ref == NULL || ref->kernel == NULL) {
			fprintf(stderr, "nkimodel: '%s' is not a saved "
			    "kernel\n", argv[optind]);
			return (1);
		}
		ir = ref->kernel->ir.data;
		irlen = ref->kernel->ir.len;
		if (target == NULL && ref->target != NULL && *ref->target)
			target = ref->target;
	}
	/* Plan: the same validation and lowering the cpu backend does. */
	memset(&sd, 0, sizeof sd);
	if (sim_compile(ir, irlen, &image, &image_len, &sd) != SIM_OK ||
	    sim_program_load(image, image_len, &sp, &sd) != SIM_OK) {
		fprintf(stderr, "nkimodel: cannot compile '%s': %s\n",
		    argv[optind], sd.msg);
		return (1);
	}
	name = sim_program_name(sp);
	if (model_image_ir(image, image_len, &pir, &plen) != 0) {
		fprintf(stderr, "nkimodel: unexpected image layout\n");
		return (1);
	}
	memset(&o, 0, sizeof o);
	o.target = target;
	o.unfitted = unfitted;
	err = model_report(pir, plen, &o, name, 1, out != NULL ?
	    NKIMODEL_EVENTS : 0, &trace, &tlen, &summary, &slen, &r, diag,
	    sizeof diag);
	if (err != 0) {
		fprintf(stderr, "nkimodel: cannot model '%s': %s\n", name,
		    diag[0] ? diag : model_strerror(err));
		return (1);
	}
	if (out != NULL)
		nkimodel_write(out, trace, tlen);
	if (json)
		fwrite(summary, 1, slen, stdout);
	else
		printf("%s on %s: %.3f us modeled (deterministic), %llu "
		    "instructions, modeled in %.3f s\n", name, r.target,
		    r.total_ns / 1e3, (unsigned long long)r.instructions,
		    r.host_seconds);
	free(trace);
	free(summary);
	sim_program_free(sp);
	free(image);
	if (ref != NULL)
		nkid__v1__kernel_ref__free_unpacked(ref, NULL);
	free(file);
	return (0);
}

/*
 * fuzz_config.c: libFuzzer target for nkid's configuration parser
 * (config_load_string): any bytes get a config or a message naming the
 * culprit; an accepted config copies, merges as a reload and dumps.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/config.h"
#include "daemon/log.h"

int	LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static FILE		*devnull;
	struct config		 cfg, def, copy;
	struct config_override	 ov = { NULL, NULL };
	char			 err[1024];

	if (devnull == NULL) {
		devnull = fopen("/dev/null", "w");
		log_level_set(LOG_LEVEL_ERROR);
	}
	if (size & 1)
		ov.state_dir = "/tmp/nkid-fuzz-state";
	err[0] = '\0';
	if (config_load_string(&cfg, "fuzz.json", (const char *)data, size,
	    &ov, err, sizeof err) != 0) {
		if (strncmp(err, "config 'fuzz.json'", 18) != 0) {
			fprintf(stderr, "fuzz_config: message does not name "
			    "the file: '%s'\n", err);
			abort();
		}
		return (0);
	}
	config_copy(&copy, &cfg);
	if (config_load_string(&def, "defaults", "{}", 2, NULL, err,
	    sizeof err) != 0)
		abort();
	(void)config_reload_merge(&def, &copy);
	config_dump(&cfg, devnull);
	config_release(&copy);
	config_release(&def);
	config_release(&cfg);
	return (0);
}

/*
 * nkictl.c: the command line of nkid. Everything is in ctl_main (so that
 * tests can drive it); the command table is in ctl_cmd.c.
 */
#include <stdio.h>

#include "ctl.h"

int
main(int argc, char **argv)
{
	return ctl_main(argc, argv, stdout, stderr);
}

/* nkictl.c: the command line of nkid; everything is in ctl_main (so that tests can drive it), the command table in ctl_cmd.c. */
#include <stdio.h>

#include "ctl.h"

int
main(int argc, char **argv)
{
	ctl_main_exit(argc, argv);
}

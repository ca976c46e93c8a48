/* cli/backends.c: `assay backends`: lists every backend, whether it is available here, its
 * device, and why not when it is not (no library, no device, driver refused). */
#include <stdlib.h>
#include <string.h>
#include "cli.h"

static const FlagSpec flags[] = {
	{"json", false, false, "         machine-readable output on stdout"},
	{"help", false, false, "         this help"},
};

static void jstr(const char *s)
{
	putchar('"');
	for (; *s; s++) {
		if (*s == '"' || *s == '\\')
			printf("\\%c", *s);
		else if ((unsigned char)*s < 0x20)
			printf("\\u%04x", *s);
		else
			putchar(*s);
	}
	putchar('"');
}

int cmd_backends(int argc, char **argv)
{
	Args a;
	int code = cli_parse(&a, "backends", flags, ARRAY_LEN(flags), argc, argv);
	if (code)
		return code;
	if (cli_has(&a, "help")) {
		cli_usage(stdout, "backends", "[--json]",
			  "Lists each backend, whether it is available here, its device, and the reason\n"
			  "when it is not.", flags, ARRAY_LEN(flags));
		return 0;
	}
	if (a.npos) {
		fprintf(stderr, "assay backends: takes no arguments\n");
		return 2;
	}
	bool json = cli_has(&a, "json");
	if (json)
		printf("[\n");
	for (int k = 0; be_at(k); k++) {
		const Backend *b = be_at(k);
		char why[512] = "";
		bool ok = b->available(why, sizeof why) == 0;
		char *dev = ok ? b->device() : NULL;
		if (json) {
			printf("  {\"name\": ");
			jstr(b->name);
			printf(", \"available\": %s, \"device\": ", ok ? "true" : "false");
			jstr(dev ? dev : "");
			printf(", \"reason\": ");
			jstr(ok ? "" : why);
			printf("}%s\n", be_at(k + 1) ? "," : "");
		} else if (ok) {
			printf("%-8s available    %s\n", b->name, dev ? dev : "");
		} else {
			printf("%-8s unavailable  %s\n", b->name, why[0] ? why : "(no reason given)");
		}
		free(dev);
	}
	if (json)
		printf("]\n");
	return 0;
}

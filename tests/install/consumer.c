/* SPDX-License-Identifier: MIT */
/*
 * consumer.c - a downstream program built against an installed libumcg.
 *
 * tests/install/run.sh builds it with find_package(umcg) and with
 * pkg-config. It fails unless the header and the library it found agree
 * on the version and a backend can be chosen; it prints both.
 */
#include <stdio.h>
#include <string.h>

#include <umcg/umcg.h>

#define STR_(x) #x
#define STR(x) STR_(x)
#define HEADER_VERSION \
	STR(UMCG_VERSION_MAJOR) "." STR(UMCG_VERSION_MINOR) "." STR(UMCG_VERSION_PATCH)

int main(void)
{
	const char *version = umcg_version();
	int backend;

	if (strcmp(version, HEADER_VERSION) != 0) {
		fprintf(stderr, "consumer: header says %s, library says %s\n", HEADER_VERSION,
			version);
		return 1;
	}

	backend = umcg_backend_active();
	if (backend < 0) {
		fprintf(stderr, "consumer: no backend (%d): %s\n", backend, umcg_backend_reason());
		return 1;
	}

	printf("libumcg %s backend %s\n", version, umcg_backend_name(backend));
	return 0;
}

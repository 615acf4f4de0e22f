/* SPDX-License-Identifier: MIT */
/*
 * tests/fuzz/smoke.c - the fuzz harness without libFuzzer, for CI.
 *
 * Built by the normal build (any compiler, any sanitizer preset), it feeds
 * harness.c's LLVMFuzzerTestOneInput() with
 *   - every file of the checked-in seed corpus (tests/fuzz/corpus/), and
 *   - FZ_SMOKE_INPUTS pseudo-random inputs from a fixed seed (ten times as
 *     many under UMCG_STRESS=1),
 * so that a change that breaks an invariant the fuzzer once covered fails
 * here. An invariant that fails aborts the test process (Check reports the
 * signal); the harness's watchdog turns a hang into an abort as well.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <check.h>
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"

#include "test_common.h"

#ifndef FZ_CORPUS_DIR
#error "FZ_CORPUS_DIR must name the seed corpus"
#endif

#define FZ_SMOKE_INPUTS 150
#define FZ_SMOKE_MAX_LEN 192

static unsigned int stress(void)
{
	const char *s = getenv("UMCG_STRESS");

	return s && atoi(s) ? 10 : 1;
}

static int by_name(const struct dirent **a, const struct dirent **b)
{
	return strcmp((*a)->d_name, (*b)->d_name);
}

START_TEST(corpus_replays)
{
	struct dirent **names;
	char path[4096];
	uint8_t buf[1 << 16];
	int n, i, files = 0;

	n = scandir(FZ_CORPUS_DIR, &names, NULL, by_name);
	ck_assert_msg(n >= 0, "cannot read %s", FZ_CORPUS_DIR);
	for (i = 0; i < n; i++) {
		FILE *f;
		size_t len;

		if (names[i]->d_name[0] == '.' || !strcmp(names[i]->d_name, "README")) {
			free(names[i]);
			continue;
		}
		snprintf(path, sizeof(path), "%s/%s", FZ_CORPUS_DIR, names[i]->d_name);
		free(names[i]);
		f = fopen(path, "rb");
		ck_assert_msg(f != NULL, "cannot open %s", path);
		len = fread(buf, 1, sizeof(buf), f);
		fclose(f);
		LLVMFuzzerTestOneInput(buf, len);
		files++;
	}
	free(names);
	ck_assert_msg(files > 0, "the seed corpus %s is empty", FZ_CORPUS_DIR);
}
END_TEST

START_TEST(random_inputs)
{
	uint64_t x = 0x9e3779b97f4a7c15ull; /* fixed: the same inputs every run */
	uint8_t buf[FZ_SMOKE_MAX_LEN];
	unsigned int i, n = FZ_SMOKE_INPUTS * stress();
	size_t len, j;

	for (i = 0; i < n; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		len = x % FZ_SMOKE_MAX_LEN;
		for (j = 0; j < len; j++) {
			x ^= x << 13;
			x ^= x >> 7;
			x ^= x << 17;
			buf[j] = (uint8_t)(x >> 32);
		}
		LLVMFuzzerTestOneInput(buf, len);
	}
}
END_TEST

static Suite *smoke_suite(void)
{
	Suite *s = suite_create("fuzz-smoke");
	TCase *tc = tcase_create("smoke");

	/* Check scales this by CK_TIMEOUT_MULTIPLIER. */
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, corpus_replays);
	tcase_add_test(tc, random_inputs);
	suite_add_tcase(s, tc);
	return s;
}

H_TEST_MAIN(smoke_suite, NULL)

/* SPDX-License-Identifier: MIT */
/*
 * test_nolock.c - servers never take a lock that a worker may hold (issue
 * #8, item 4): while a runtime serves, no server thread calls libc's
 * allocator (malloc, calloc, realloc, free and the aligned forms), its
 * locks (pthread_mutex_lock/trylock/timedlock, rwlocks, spinlocks,
 * condition variables, semaphores), pthread_create()/join(), or any stdio
 * function (flockfile() and the printf, puts, fwrite, ... families).
 *
 * Why it matters: a worker can be preempted anywhere, malloc() and
 * fprintf() included, holding an arena lock or a stream's lock; a server
 * that then waited for that lock would wait for a worker that waits for
 * the server.
 *
 * How: nolock_interpose.c defines those functions in this executable and
 * counts the calls of threads whose name starts with NOLOCK_SERVER_PREFIX
 * while armed. The runtime does not name its servers, so the test starts
 * it from a plain thread of that name (start_servers()); its servers
 * inherit the name, and the test checks that exactly nr_servers threads
 * carry it before it arms the counter.
 *
 * The window. Armed from the return of umcg_rt_start() to just before
 * umcg_rt_destroy() (which stops the servers). umcg_rt_start() returns
 * once every server stored `ready` (release) after registering, so a
 * server's start-up (its sigmask, affinity, and the emulation's
 * registration, which allocates and takes the registry's lock) is over;
 * after `ready` a server runs only server_loop(). A server leaves
 * server_loop() only once umcg_rt_stop() has set `stopping`, which comes
 * after the disarming store, so its tear-down (unregistration, which
 * frees its record under the registry's lock) is not counted either. The
 * window holds every scheduling decision the servers make: picks, steals,
 * enqueues for every reason, preemptions, blocks and wake-ups, parks and
 * unparks, direct handoffs, worker exits, idle waits, detection's
 * reclaims, and the last idle turns of the servers after the drain.
 *
 * The cases:
 *  - control: the interposer sees what it must (a call made by the
 *    library itself, on a thread named as a server, lands here) and
 *    nothing else (the same calls on another thread are not counted);
 *  - imports: every function libumcg.so imports that takes a libc lock
 *    is interposed here, so no server call can slip past the count;
 *  - serve: the two built-in policies, on two servers with a 100 us
 *    timeslice, under CPU hogs (preemption), yields, parks and unparks
 *    (by a worker, with direct handoffs under FIFO, and by a plain
 *    thread), announced and unannounced blocking, and worker exits;
 *    the count must be 0, and the servers' counters must show that each
 *    of those paths ran.
 *
 * Seen to fail: with a planted free(malloc(16)) in fifo_enqueue(), the
 * serve case of the FIFO policy fails, naming malloc and free with their
 * callers in libumcg.so.
 */
#include "runtime.h"

#include <dirent.h>
#include <dlfcn.h>
#include <elf.h>
#include <fcntl.h>
#include <link.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>

#include "harness.h"
#include "nolock_interpose.h"

#define SLICE_NS (100 * UINT64_C(1000))
#define NR_SERVERS 2

/* ---- helpers ------------------------------------------------------------- */

/* The number of threads of this process whose name starts with @prefix. */
static int count_named(const char *prefix)
{
	DIR *d = opendir("/proc/self/task");
	struct dirent *e;
	char path[300], comm[32];
	int n = 0, fd;
	ssize_t len;

	ck_assert_ptr_nonnull(d);
	while ((e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/proc/self/task/%s/comm", e->d_name);
		fd = open(path, O_RDONLY | O_CLOEXEC);
		len = fd < 0 ? -1 : read(fd, comm, sizeof(comm) - 1);
		if (fd >= 0)
			close(fd);
		if (len > 0 && !strncmp(comm, prefix, strlen(prefix)))
			n++;
	}
	closedir(d);
	return n;
}

struct starter {
	struct umcg_rt *rt;
	int ret;
};

static void *starter_main(void *arg)
{
	struct starter *st = arg;

	prctl(PR_SET_NAME, (unsigned long)NOLOCK_SERVER_PREFIX, 0UL, 0UL, 0UL);
	nolock_reclassify();
	st->ret = umcg_rt_start(st->rt);
	return NULL;
}

/*
 * start_servers() - start @rt from a thread named NOLOCK_SERVER_PREFIX, so
 * that its servers, and only they, carry that name.
 */
static void start_servers(struct umcg_rt *rt)
{
	struct starter st = { rt, 1 };

	ck_assert_int_eq(count_named(NOLOCK_SERVER_PREFIX), 0);
	h_join(h_thread(starter_main, &st));
	ck_assert_int_eq(st.ret, 0);
	/* The starter's /proc entry goes shortly after its join. */
	WAIT_UNTIL(count_named(NOLOCK_SERVER_PREFIX) == (int)umcg_rt_nr_servers(rt));
}

/* Describe counted call @c into @buf: its function and its caller. */
static void describe(const struct nolock_call *c, char *buf, size_t len)
{
	Dl_info info;
	const char *file;

	if (dladdr(c->caller, &info) && info.dli_fname) {
		file = strrchr(info.dli_fname, '/');
		file = file ? file + 1 : info.dli_fname;
		snprintf(buf, len, "%s() by server %d from %s+%#lx%s%s", c->fn, (int)c->tid, file,
			 (unsigned long)((const char *)c->caller - (const char *)info.dli_fbase),
			 info.dli_sname ? " near " : "", info.dli_sname ? info.dli_sname : "");
	} else {
		snprintf(buf, len, "%s() by server %d from %p", c->fn, (int)c->tid, c->caller);
	}
}

/* Fail, listing the calls counted (each function and caller once), if any. */
static void expect_no_calls(const char *what)
{
	long n = nolock_count(), i, j;
	char msg[4096], one[256];
	size_t off = 0;
	const struct nolock_call *c, *d;

	if (!n)
		return;
	msg[0] = '\0';
	for (i = 0; (c = nolock_record(i)) && off < sizeof(msg) - 1; i++) {
		for (j = 0; j < i; j++) {
			d = nolock_record(j);
			if (d->fn == c->fn && d->caller == c->caller)
				break;
		}
		if (j < i)
			continue;
		describe(c, one, sizeof(one));
		off += (size_t)snprintf(msg + off, sizeof(msg) - off, "\n  %s", one);
	}
	ck_abort_msg("%s: servers made %ld call(s) to libc's allocator, locks or stdio while "
		     "serving; the first %d were (addr2line -f -e <library> <offset> names each "
		     "caller):%s",
		     what, n, NOLOCK_MAX_RECORDS, msg);
}

/* ---- the control ------------------------------------------------------------ */

static atomic_int control_done;
static pthread_mutex_t control_mutex = PTHREAD_MUTEX_INITIALIZER;

/* Whether @caller lies in libumcg.so. */
static bool in_library(const void *caller)
{
	Dl_info info;

	return dladdr(caller, &info) && info.dli_fname && strstr(info.dli_fname, "libumcg.so");
}

static void *control_main(void *arg)
{
	struct umcg_rt *rt = NULL;
	FILE *f = arg;
	char buf[32];

	prctl(PR_SET_NAME, (unsigned long)(NOLOCK_SERVER_PREFIX "-ctl"), 0UL, 0UL, 0UL);
	nolock_reclassify();
	/* The library's own allocations (umcg_rt_create() callocs the runtime). */
	ck_assert_int_eq(umcg_rt_create(&rt, NULL), 0);
	ck_assert_int_eq(umcg_rt_destroy(rt), 0);
	/* And the test's own calls of the rest. */
	pthread_mutex_lock(&control_mutex);
	pthread_mutex_unlock(&control_mutex);
	flockfile(f);
	funlockfile(f);
	fprintf(f, "%d\n", 1);
	snprintf(buf, sizeof(buf), "%d", 2);
	STORE(&control_done, 1);
	return NULL;
}

START_TEST(test_control)
{
	FILE *f = fopen("/dev/null", "w");
	const struct nolock_call *c;
	bool from_lib = false;
	long i;
	void *p;

	ck_assert_ptr_nonnull(f);
	nolock_arm(true);
	/* Not a server: not counted. */
	p = malloc(64);
	free(p);
	fprintf(f, "x\n");
	ck_assert_int_eq(nolock_count(), 0);
	h_join(h_thread(control_main, f));
	nolock_arm(false);
	ck_assert_int_eq(LOAD(&control_done), 1);
	ck_assert_int_ge(nolock_count_of("calloc"), 1);
	ck_assert_int_ge(nolock_count_of("free"), 1);
	ck_assert_int_ge(nolock_count_of("pthread_mutex_lock"), 1);
	ck_assert_int_ge(nolock_count_of("flockfile"), 1);
	ck_assert_int_ge(nolock_count_of("fprintf") + nolock_count_of("__fprintf_chk"), 1);
	ck_assert_int_ge(nolock_count_of("snprintf") + nolock_count_of("__snprintf_chk"), 1);
	/* umcg_rt_create()'s calloc() was the library's own call. */
	for (i = 0; (c = nolock_record(i)); i++)
		from_lib |= !strcmp(c->fn, "calloc") && in_library(c->caller);
	ck_assert_msg(from_lib, "no calloc() called by libumcg.so was seen");
	fclose(f);
}
END_TEST

/* ---- the library's imports ---------------------------------------------- */

/*
 * Substrings (or, after '=', whole names) of the names of libc functions
 * that take a lock of libc's (or the dynamic loader's), or are stdio. Plain allocating functions
 * (strdup(), qsort(), ...) need no entry: they allocate through malloc(),
 * which is interposed and counts whoever calls it.
 */
static const char *const lock_takers[] = {
	"alloc",	  "free",	  "memalign",	   "printf",
	"scanf",	  "puts",	  "putc",	   "=getc",
	"=gets",	  "=getchar",	  "getc_unlocked", "getchar_unlocked",
	"fgetc",	  "fgets",	  "fopen",	   "fdopen",
	"freopen",	  "fclose",	  "fflush",	   "fwrite",
	"fread",	  "fseek",	  "ftell",	   "rewind",
	"setvbuf",	  "setbuf",	  "lockfile",	   "perror",
	"getline",	  "getdelim",	  "memstream",	   "fmemopen",
	"_lock",	  "_trylock",	  "_timedlock",	   "_clocklock",
	"rdlock",	  "wrlock",	  "cond_wait",	   "cond_timedwait",
	"cond_clockwait", "sem_wait",	  "sem_timedwait", "sem_clockwait",
	"pthread_create", "pthread_join", "tryjoin",	   "timedjoin",
	"dlopen",	  "dlsym",	  "dlvsym",	   "dlclose",
	"dladdr",	  "syslog",
};

/*
 * Imports that match but are not interposed, and why no server calls them.
 * dlsym() and dlvsym() cannot be interposed here without changing what
 * RTLD_NEXT means for the library that calls them.
 */
static const char *const not_on_server_path[] = {
	/* io.c's LIBC() slots: resolved at the first call of a wrapper or of
	 * a libumcg-preload.so entry point, by a worker or a plain thread. */
	"dlsym",
	"dlvsym",
};

static bool listed(const char *name, const char *const *list, size_t n, bool substring)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (list[i][0] == '=' ? !strcmp(name, list[i] + 1) :
		    substring	      ? strstr(name, list[i]) != NULL :
					!strcmp(name, list[i]))
			return true;
	return false;
}

static char lib_path[PATH_MAX];

static int find_umcg(struct dl_phdr_info *info, size_t size, void *data)
{
	const char *base = info->dlpi_name ? strrchr(info->dlpi_name, '/') : NULL;

	(void)size;
	(void)data;
	base = base ? base + 1 : info->dlpi_name;
	if (!base || strncmp(base, "libumcg.so", 10))
		return 0;
	snprintf(lib_path, sizeof(lib_path), "%s", info->dlpi_name);
	return 1;
}

START_TEST(test_imports_are_interposed)
{
	const ElfW(Ehdr) * eh;
	const ElfW(Shdr) * sh;
	char missing[2048] = "";
	size_t off = 0, i, j, n, imports = 0;
	struct stat stb;
	const char *base;
	int fd;

	ck_assert_int_eq(dl_iterate_phdr(find_umcg, NULL), 1);
	fd = open(lib_path, O_RDONLY | O_CLOEXEC);
	ck_assert_msg(fd >= 0, "open %s", lib_path);
	ck_assert_int_eq(fstat(fd, &stb), 0);
	base = mmap(NULL, (size_t)stb.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	ck_assert_ptr_ne(base, MAP_FAILED);
	eh = (const ElfW(Ehdr) *)base;
	ck_assert(!memcmp(eh->e_ident, ELFMAG, SELFMAG));
	sh = (const ElfW(Shdr) *)(base + eh->e_shoff);
	for (i = 0; i < eh->e_shnum; i++) {
		const ElfW(Sym) * sym;
		const char *str;

		if (sh[i].sh_type != SHT_DYNSYM)
			continue;
		sym = (const ElfW(Sym) *)(base + sh[i].sh_offset);
		str = base + sh[sh[i].sh_link].sh_offset;
		n = sh[i].sh_size / sh[i].sh_entsize;
		for (j = 1; j < n; j++) {
			const char *name = str + sym[j].st_name;

			if (sym[j].st_shndx != SHN_UNDEF || !*name)
				continue;
			imports++;
			/* A sanitizer's own entry points are not libc's. */
			if (!strncmp(name, "__asan_", 7) || !strncmp(name, "__tsan_", 7) ||
			    !strncmp(name, "__ubsan_", 8) || !strncmp(name, "__sanitizer", 11) ||
			    !strncmp(name, "__lsan_", 7))
				continue;
			if (!listed(name, lock_takers, sizeof(lock_takers) / sizeof(lock_takers[0]),
				    true) ||
			    nolock_is_interposed(name) ||
			    listed(name, not_on_server_path,
				   sizeof(not_on_server_path) / sizeof(not_on_server_path[0]),
				   false))
				continue;
			off += (size_t)snprintf(missing + off, sizeof(missing) - off, " %s", name);
			if (off >= sizeof(missing))
				off = sizeof(missing) - 1;
		}
	}
	munmap((void *)base, (size_t)stb.st_size);
	close(fd);
	ck_assert_msg(imports > 10, "read only %zu imports from %s", imports, lib_path);
	ck_assert_msg(!off,
		      "%s imports functions that take a libc lock and that nolock_interpose.c "
		      "does not interpose (add them there, or to not_on_server_path with the "
		      "reason):%s",
		      lib_path, missing);
}
END_TEST

/* ---- serving ---------------------------------------------------------------- */

enum {
	K_HOG0,
	K_HOG1,
	K_YIELD0,
	K_YIELD1,
	K_PARK0, /* unparked by a worker */
	K_PARK1, /* unparked by a plain thread */
	K_UNPARKER,
	K_BLOCKER,
	K_SPAWNER,
	NR_KINDS
};

static atomic_ulong progress[NR_KINDS];
static atomic_int stop;
static struct umcg_worker *parked[2];
static atomic_int parkers_ready;
static struct umcg_rt *the_rt;

static void *hog(void *arg)
{
	atomic_ulong *p = arg;

	while (!LOAD(&stop)) {
		h_spin_us(20);
		BUMP(p);
	}
	return NULL;
}

/* Yields, and allocates and formats on its own account (not a server). */
static void *yielder(void *arg)
{
	atomic_ulong *p = arg;
	char buf[64];
	void *m;

	while (!LOAD(&stop)) {
		m = malloc(32 + PEEK(p) % 512);
		EXPECT(m, "malloc failed in a worker");
		snprintf(buf, sizeof(buf), "%lu", PEEK(p));
		free(m);
		EXPECT(umcg_yield() == 0, "umcg_yield() failed");
		BUMP(p);
	}
	return NULL;
}

static void *parker(void *arg)
{
	int i = (int)(intptr_t)arg;

	parked[i] = umcg_self();
	atomic_fetch_add(&parkers_ready, 1);
	while (!LOAD(&stop)) {
		EXPECT(umcg_park() == 0, "umcg_park() failed");
		BUMP(&progress[K_PARK0 + i]);
	}
	return NULL;
}

static void *unparker(void *arg)
{
	(void)arg;
	YIELD_UNTIL(LOAD(&parkers_ready) == 2);
	while (!LOAD(&stop)) {
		EXPECT(umcg_unpark(parked[0]) == 0, "umcg_unpark() failed");
		EXPECT(umcg_yield() == 0, "umcg_yield() failed");
		BUMP(&progress[K_UNPARKER]);
	}
	return NULL;
}

static void *plain_unparker(void *arg)
{
	(void)arg;
	WAIT_UNTIL(LOAD(&parkers_ready) == 2);
	while (!LOAD(&stop)) {
		EXPECT(umcg_unpark(parked[1]) == 0, "umcg_unpark() failed");
		h_sleep_us(200);
	}
	return NULL;
}

/* Announced sleeps, and now and then one nobody announces (3 ms: more
 * than the emulation's default detection bound, 2 ms). */
static void *blocker(void *arg)
{
	struct timespec ts = { 0, 100000 };
	atomic_ulong *p = arg;

	while (!LOAD(&stop)) {
		EXPECT(umcg_sleep_for(50000) == 0, "umcg_sleep_for() failed");
		if (umcg_block_begin() == 0) {
			syscall(SYS_nanosleep, &ts, NULL);
			umcg_block_end();
		}
		if (PEEK(p) % 32 == 31) {
			struct timespec longer = { 0, 3000000 };

			syscall(SYS_nanosleep, &longer, NULL);
		}
		BUMP(p);
	}
	return NULL;
}

/* Workers that start and exit, and a join that blocks. */
static void *spawner(void *arg)
{
	atomic_ulong *p = arg;
	struct umcg_worker *w;
	void *ret;

	while (!LOAD(&stop)) {
		EXPECT(umcg_spawn(the_rt, &w, NULL, echo, (void *)p) == 0, "umcg_spawn() failed");
		EXPECT(umcg_join(w, &ret) == 0 && ret == (void *)p, "umcg_join() failed");
		BUMP(p);
	}
	return NULL;
}

static const struct umcg_policy_ops *const policies[] = { &umcg_policy_fifo,
							  &umcg_policy_priority };

static struct umcg_worker *spawn_kind(struct umcg_rt *rt, int prio, umcg_worker_fn fn, void *arg)
{
	struct umcg_worker_attr wa;
	struct umcg_worker *w = NULL;

	umcg_worker_attr_init(&wa);
	/* Under strict priority the higher ones mostly sleep, park or join. */
	wa.priority = prio;
	ck_assert_int_eq(umcg_spawn(rt, &w, &wa, fn, arg), 0);
	return w;
}

START_TEST(test_servers_take_no_lock)
{
	const struct umcg_policy_ops *policy = policies[_i];
	struct umcg_worker *w[NR_KINDS];
	struct umcg_server_stats st, sum = { 0 };
	struct umcg_rt_attr attr;
	struct h_watchdog *wd;
	atomic_ulong *counters[NR_KINDS];
	uint64_t end;
	unsigned int s;
	pthread_t plain;
	int k;

	umcg_rt_attr_init(&attr);
	attr.nr_servers = NR_SERVERS;
	attr.timeslice_ns = SLICE_NS;
	attr.policy = policy;
	ck_assert_int_eq(umcg_rt_create(&the_rt, &attr), 0);
	start_servers(the_rt);
	nolock_arm(true);

	w[K_HOG0] = spawn_kind(the_rt, 0, hog, &progress[K_HOG0]);
	w[K_HOG1] = spawn_kind(the_rt, 0, hog, &progress[K_HOG1]);
	w[K_YIELD0] = spawn_kind(the_rt, 0, yielder, &progress[K_YIELD0]);
	w[K_YIELD1] = spawn_kind(the_rt, 0, yielder, &progress[K_YIELD1]);
	w[K_PARK0] = spawn_kind(the_rt, 5, parker, (void *)(intptr_t)0);
	w[K_PARK1] = spawn_kind(the_rt, 5, parker, (void *)(intptr_t)1);
	w[K_UNPARKER] = spawn_kind(the_rt, 0, unparker, NULL);
	w[K_BLOCKER] = spawn_kind(the_rt, 10, blocker, &progress[K_BLOCKER]);
	w[K_SPAWNER] = spawn_kind(the_rt, 3, spawner, &progress[K_SPAWNER]);
	plain = h_thread(plain_unparker, NULL);

	/* Every kind keeps moving (a stuck server stops some of them). */
	for (k = 0; k < NR_KINDS; k++)
		counters[k] = &progress[k];
	wd = h_watchdog_run(&(struct h_watchdog_spec){
		.what = policy->name,
		.counters = counters,
		.n = NR_KINDS,
		.dump = watchdog_dump,
		.arg = the_rt,
	});
	end = h_now(CLOCK_MONOTONIC) + h_stress() * SEC;
	while (h_now(CLOCK_MONOTONIC) < end)
		h_sleep_us(10000);
	for (k = 0; k < NR_KINDS; k++)
		WAIT_UNTIL(LOAD(&progress[k]) >= 10);
	h_watchdog_stop(wd);

	STORE(&stop, 1);
	h_join(plain);
	/* A parker between its look at `stop` and its park takes this permit. */
	ck_assert_int_eq(umcg_unpark(parked[0]), 0);
	ck_assert_int_eq(umcg_unpark(parked[1]), 0);
	for (k = 0; k < NR_KINDS; k++)
		ck_assert_int_eq(umcg_join(w[k], NULL), 0);
	ck_assert_int_eq(umcg_rt_drain(the_rt), 0);
	for (s = 0; s < NR_SERVERS; s++) {
		ck_assert_int_eq(umcg_rt_server_stats(the_rt, s, &st), 0);
		sum.switches += st.switches;
		sum.preemptions += st.preemptions;
		sum.blocks += st.blocks;
		sum.yields += st.yields;
		sum.steals += st.steals;
		sum.idle_wakeups += st.idle_wakeups;
		sum.unannounced_blocks += st.unannounced_blocks;
	}
	/* Disarmed before the stop: the servers' tear-down is not serving. */
	nolock_arm(false);
	fprintf(stderr,
		"test_servers_take_no_lock(%s): %" PRIu64 " switches, %" PRIu64
		" preemptions, %" PRIu64 " blocks (%" PRIu64 " unannounced), %" PRIu64
		" yields, %" PRIu64 " steals, %" PRIu64 " idle wake-ups; %lu parks, %lu "
		"spawn/join; %ld counted calls\n",
		policy->name, sum.switches, sum.preemptions, sum.blocks, sum.unannounced_blocks,
		sum.yields, sum.steals, sum.idle_wakeups,
		LOAD(&progress[K_PARK0]) + LOAD(&progress[K_PARK1]), LOAD(&progress[K_SPAWNER]),
		nolock_count());
	ck_assert_int_eq(umcg_rt_destroy(the_rt), 0);
	expect_no_calls(policy->name);
	/* Not vacuous: each path of the server loop ran. */
	ck_assert_uint_gt(sum.switches, 0);
	ck_assert_uint_gt(sum.preemptions, 0);
	ck_assert_uint_gt(sum.blocks, 0);
	ck_assert_uint_gt(sum.yields, 0);
}
END_TEST

/* ---- the suite ------------------------------------------------------------ */

static Suite *nolock_suite(void)
{
	Suite *s = suite_create("nolock");
	TCase *tc;

	tc = tcase_create("interposer");
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, test_control);
	tcase_add_test(tc, test_imports_are_interposed);
	suite_add_tcase(s, tc);

	tc = tcase_create("serve");
	tcase_set_timeout(tc, 60);
	tcase_add_loop_test(tc, test_servers_take_no_lock, 0,
			    (int)(sizeof(policies) / sizeof(policies[0])));
	suite_add_tcase(s, tc);
	return s;
}

static int prepare(void)
{
	int backend = umcg_backend_active();

	if (backend < 0) {
		fprintf(stderr, "test-nolock: skipped, no UMCG backend: %s\n",
			umcg_backend_reason());
		return 77;
	}
	fprintf(stderr, "test-nolock: backend %s\n", umcg_backend_name(backend));
	return 0;
}

H_TEST_MAIN(nolock_suite, prepare)

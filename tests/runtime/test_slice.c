/* SPDX-License-Identifier: MIT */
/*
 * test_slice.c - slice ends by UMCG_PREEMPT_TIMER (<umcg/runtime.h>, and
 * emulated.c, "Slice timers"), against what the mode promises:
 *
 *   - umcg_rt_attr.preempt and UMCG_PREEMPT are checked, and
 *     umcg_rt_preempt_mode() tells what runs (mode_reported);
 *   - a CPU hog cannot starve the others under either policy, on timers
 *     the emulation really creates for the workers it preempts, and a
 *     slice is never ended early (hog_preempted_by_its_timer);
 *   - a worker's timer never fires into a region: a raw epoll_wait(),
 *     which Linux never resumes after a signal handler, inside
 *     umcg_block_begin()/_end() right after a run with an armed timer
 *     started, returns after its full timeout with 0 (region_never_cut);
 *   - a process that may have no timer (RLIMIT_SIGPENDING 0) is preempted
 *     by its servers instead (refused_timer_falls_back);
 *   - a worker that runs by a direct handoff (no timer: its server
 *     preempts it) is preempted too (handoff_run_preempted).
 *
 * On the kernel backend the mode falls back to server preemption: the
 * same cases run, and the ones about the emulation's timers check that
 * none exist. Counts only, no timing, beyond "never shorter than asked";
 * waits are bounded by h_liveness_ns().
 */
#include "runtime.h"

#include <sys/epoll.h>
#include <sys/syscall.h>

#define SLICE_NS (1 * MS)
#define PEERS 2
#define PEER_ROUNDS 200

static atomic_int stop, hog_running;
static atomic_ulong progress[PEERS];

static bool emulated(void)
{
	return umcg_backend_active() == UMCG_BACKEND_EMULATED;
}

static struct umcg_rt *timer_rt(unsigned int nr, uint64_t slice,
				const struct umcg_policy_ops *policy)
{
	struct umcg_rt_attr attr;

	umcg_rt_attr_init(&attr);
	attr.nr_servers = nr;
	attr.timeslice_ns = slice;
	attr.preempt = UMCG_PREEMPT_TIMER;
	attr.policy = policy;
	return rt_start_attr(&attr, "timer_rt");
}

/*
 * kick_timers() - how many POSIX timers of this process signal one of its
 * threads with the kick signal (from /proc/self/timers; -1 if it cannot be
 * read): the emulation's slice timers.
 */
static int kick_timers(void)
{
	char line[128], want_sig[32];
	bool sig = false;
	int n = 0;
	FILE *f = fopen("/proc/self/timers", "r");

	if (!f)
		return -1;
	snprintf(want_sig, sizeof(want_sig), "signal: %d/", umcg_kick_signal());
	while (fgets(line, sizeof(line), f)) {
		if (!strncmp(line, "ID:", 3))
			sig = false;
		else if (!strncmp(line, want_sig, strlen(want_sig)))
			sig = true;
		else if (sig && !strncmp(line, "notify: signal/tid.", 19))
			n++;
	}
	fclose(f);
	return n;
}

/* ---- the mode and its checks --------------------------------------------- */

/* A runtime built from @attr reports @want, and goes. */
static void expect_mode(const struct umcg_rt_attr *attr, int want)
{
	struct umcg_rt *rt = NULL;

	ck_assert_int_eq(umcg_rt_create(&rt, attr), 0);
	ck_assert_int_eq(umcg_rt_preempt_mode(rt), want);
	ck_assert_int_eq(umcg_rt_destroy(rt), 0);
}

START_TEST(mode_reported)
{
	struct umcg_rt_attr attr;
	struct umcg_rt *rt = NULL, *keep = (struct umcg_rt *)&attr;
	int bad[] = { -1, 3, 100 };
	int timer_or_server = emulated() ? UMCG_PREEMPT_TIMER : UMCG_PREEMPT_SERVER;
	size_t i;

	unsetenv("UMCG_PREEMPT");
	ck_assert_int_eq(umcg_rt_preempt_mode(NULL), -EINVAL);
	umcg_rt_attr_init(&attr);
	ck_assert_int_eq(attr.preempt, UMCG_PREEMPT_DEFAULT);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		attr.preempt = bad[i];
		rt = keep;
		ck_assert_int_eq(umcg_rt_create(&rt, &attr), -EINVAL);
		ck_assert_ptr_eq(rt, keep); /* nothing changed */
	}
	/* Cooperative: no mode. */
	attr.preempt = UMCG_PREEMPT_TIMER;
	expect_mode(&attr, 0);
	/* Asked for, and what the backend makes of it. */
	attr.timeslice_ns = SLICE_NS;
	expect_mode(&attr, timer_or_server);
	attr.preempt = UMCG_PREEMPT_SERVER;
	expect_mode(&attr, UMCG_PREEMPT_SERVER);
	/* The default follows UMCG_PREEMPT; an explicit mode wins over it. */
	attr.preempt = UMCG_PREEMPT_DEFAULT;
	expect_mode(&attr, UMCG_PREEMPT_SERVER);
	setenv("UMCG_PREEMPT", "timer", 1);
	expect_mode(&attr, timer_or_server);
	attr.preempt = UMCG_PREEMPT_SERVER;
	expect_mode(&attr, UMCG_PREEMPT_SERVER);
	attr.preempt = UMCG_PREEMPT_DEFAULT;
	setenv("UMCG_PREEMPT", "sometimes", 1);
	rt = keep;
	ck_assert_int_eq(umcg_rt_create(&rt, &attr), -EINVAL);
	ck_assert_ptr_eq(rt, keep);
	unsetenv("UMCG_PREEMPT");
}
END_TEST

/* ---- a hog and its peers ------------------------------------------------- */

static void *hog(void *arg)
{
	(void)arg;
	STORE(&hog_running, 1);
	while (!LOAD(&stop))
		;
	return NULL;
}

/* Yields PEER_ROUNDS times, which it can only while the hog is preempted. */
static void *peer(void *arg)
{
	atomic_ulong *mine = arg;
	unsigned long i;

	for (i = 0; i < PEER_ROUNDS; i++) {
		BUMP(mine);
		EXPECT(umcg_yield() == 0, "umcg_yield");
	}
	return NULL;
}

/*
 * Run a hog and PEERS peers on one server of @rt; the peers finish only if
 * the hog is preempted. Return: the hog's counters, and in *@timers how
 * many slice timers the process had half-way, while all of them ran (-1:
 * unknown). Each of the three is picked while the others wait, so each
 * can have one; which ones do depends on the order of the picks.
 */
static struct umcg_worker_stats run_hog(struct umcg_rt *rt, int *timers)
{
	struct umcg_worker *h = NULL, *p[PEERS] = { NULL };
	struct umcg_worker_stats st;
	struct h_watchdog *wd;
	unsigned int i;

	STORE(&stop, 0);
	STORE(&hog_running, 0);
	for (i = 0; i < PEERS; i++)
		atomic_store(&progress[i], 0);
	ck_assert_int_eq(umcg_spawn(rt, &h, NULL, hog, NULL), 0);
	WAIT_UNTIL(LOAD(&hog_running));
	wd = watchdog_start("hog peers", progress, PEERS, PEERS * PEER_ROUNDS, rt);
	for (i = 0; i < PEERS; i++)
		ck_assert_int_eq(umcg_spawn(rt, &p[i], NULL, peer, &progress[i]), 0);
	WAIT_UNTIL(PEEK(&progress[0]) >= PEER_ROUNDS / 2 && PEEK(&progress[1]) >= PEER_ROUNDS / 2);
	*timers = kick_timers();
	for (i = 0; i < PEERS; i++)
		ck_assert_int_eq(umcg_join(p[i], NULL), 0);
	h_watchdog_stop(wd);
	ck_assert_int_eq(umcg_worker_stats(h, &st), 0);
	STORE(&stop, 1);
	ck_assert_int_eq(umcg_join(h, NULL), 0);
	return st;
}

/* _i: 0 = FIFO, 1 = strict priority. */
START_TEST(hog_preempted_by_its_timer)
{
	const struct umcg_policy_ops *pol[] = { &umcg_policy_fifo, &umcg_policy_priority };
	struct umcg_rt *rt = timer_rt(1, SLICE_NS, pol[_i]);
	struct umcg_worker_stats st;
	int timers = -1;

	st = run_hog(rt, &timers);
	EXPECT(st.preemptions > 0, "the hog was never preempted");
	/* Never early: every run of the hog lasted a slice at least. */
	EXPECT(st.running_ns >= st.preemptions * SLICE_NS,
	       "hog ran %" PRIu64 " ns in %" PRIu64 " runs of a %" PRIu64 " ns slice",
	       st.running_ns, st.preemptions, SLICE_NS);
	if (timers >= 0) {
		if (emulated())
			EXPECT(timers >= 1 && timers <= 1 + PEERS,
			       "%d slice timers for three workers", timers);
		else
			EXPECT(timers == 0, "the kernel backend made %d timers", timers);
	}
	rt_end(rt);
}
END_TEST

/* ---- regions ---------------------------------------------------------- */

#define REGION_ROUNDS 10
#define REGION_WAIT_MS 20

static void *region_sleeper(void *arg)
{
	int ep = epoll_create1(0), i;
	struct epoll_event ev;
	uint64_t t0;
	long r;

	(void)arg;
	EXPECT(ep >= 0, "epoll_create1");
	for (i = 0; i < REGION_ROUNDS; i++) {
		/* A fresh run, picked while the hog waits: its timer is armed
		 * for a slice from now, well inside the wait below. */
		EXPECT(umcg_yield() == 0, "umcg_yield");
		EXPECT(umcg_block_begin() == 0, "umcg_block_begin");
		t0 = h_now(CLOCK_MONOTONIC);
		r = syscall(SYS_epoll_wait, ep, &ev, 1, REGION_WAIT_MS);
		EXPECT(r == 0, "raw epoll_wait in a region returned %ld (errno %d)", r, errno);
		EXPECT(h_now(CLOCK_MONOTONIC) - t0 >= REGION_WAIT_MS * MS,
		       "raw epoll_wait in a region ended early");
		EXPECT(umcg_block_end() == 0, "umcg_block_end");
	}
	close(ep);
	return NULL;
}

START_TEST(region_never_cut)
{
	struct umcg_rt *rt = timer_rt(1, SLICE_NS, NULL);
	struct umcg_worker *h = NULL, *w = NULL;
	struct umcg_server_stats st;

	STORE(&stop, 0);
	STORE(&hog_running, 0);
	ck_assert_int_eq(umcg_spawn(rt, &h, NULL, hog, NULL), 0);
	WAIT_UNTIL(LOAD(&hog_running));
	ck_assert_int_eq(umcg_spawn(rt, &w, NULL, region_sleeper, NULL), 0);
	ck_assert_int_eq(umcg_join(w, NULL), 0);
	STORE(&stop, 1);
	ck_assert_int_eq(umcg_join(h, NULL), 0);
	ck_assert_int_eq(umcg_rt_server_stats(rt, 0, &st), 0);
	/* Not vacuous: the sleeper got the server back from the hog. */
	EXPECT(st.preemptions >= REGION_ROUNDS, "only %" PRIu64 " preemptions", st.preemptions);
	rt_end(rt);
}
END_TEST

/* ---- no timer to be had ----------------------------------------------- */

/* In a child whose user may queue no signal: timer_create() fails with
 * EAGAIN, and the servers preempt. Return: the child's exit status. */
static int refused_child(void)
{
	struct rlimit rl = { 0, 0 };
	struct umcg_worker_stats st;
	struct umcg_rt *rt;
	int timers = -1, st_;
	pid_t pid = fork();

	if (pid == 0) {
		if (setrlimit(RLIMIT_SIGPENDING, &rl))
			_exit(77);
		rt = timer_rt(1, SLICE_NS, NULL);
		st = run_hog(rt, &timers);
		if (st.preemptions == 0)
			_exit(1);
		if (timers > 0)
			_exit(2);
		rt_end(rt);
		_exit(0);
	}
	ck_assert_int_gt(pid, 0);
	ck_assert_int_eq(waitpid(pid, &st_, 0), pid);
	ck_assert(WIFEXITED(st_));
	return WEXITSTATUS(st_);
}

START_TEST(refused_timer_falls_back)
{
	int r = refused_child();

	if (r == 77) {
		fprintf(stderr, "refused_timer_falls_back: cannot lower RLIMIT_SIGPENDING, "
				"skipped\n");
		return;
	}
	EXPECT(r == 0, "child failed with %d (1: the hog starved its peers, 2: it got a timer)", r);
}
END_TEST

/* ---- a run by direct handoff -------------------------------------------- */

/*
 * The parked worker, unparked by the hog-to-be: with FIFO the unpark stages
 * a direct handoff, and the unparker's next yield hands it the server. It
 * then hogs; its run did not start by its server's pick, so it has no
 * timer, and its server must preempt it for the peers to finish.
 */
static _Atomic(struct umcg_worker *) parked_w;
static atomic_int parked_ready;

static void *handed_hog(void *arg)
{
	(void)arg;
	STORE(&parked_ready, 1);
	while (!LOAD(&hog_running))
		EXPECT(umcg_park() == 0, "umcg_park");
	while (!LOAD(&stop))
		;
	return NULL;
}

static void *unparker(void *arg)
{
	(void)arg;
	STORE(&hog_running, 1);
	EXPECT(umcg_unpark(atomic_load(&parked_w)) == 0, "umcg_unpark");
	EXPECT(umcg_yield() == 0, "umcg_yield");
	return NULL;
}

START_TEST(handoff_run_preempted)
{
	struct umcg_rt *rt = timer_rt(1, SLICE_NS, NULL);
	struct umcg_worker *h = NULL, *u = NULL, *p[PEERS] = { NULL };
	struct umcg_worker_stats st;
	struct h_watchdog *wd;
	unsigned int i;

	STORE(&stop, 0);
	STORE(&hog_running, 0);
	STORE(&parked_ready, 0);
	for (i = 0; i < PEERS; i++)
		atomic_store(&progress[i], 0);
	ck_assert_int_eq(umcg_spawn(rt, &h, NULL, handed_hog, NULL), 0);
	atomic_store(&parked_w, h);
	WAIT_UNTIL(LOAD(&parked_ready));
	ck_assert_int_eq(umcg_spawn(rt, &u, NULL, unparker, NULL), 0);
	ck_assert_int_eq(umcg_join(u, NULL), 0);
	wd = watchdog_start("handoff peers", progress, PEERS, PEERS * PEER_ROUNDS, rt);
	for (i = 0; i < PEERS; i++)
		ck_assert_int_eq(umcg_spawn(rt, &p[i], NULL, peer, &progress[i]), 0);
	for (i = 0; i < PEERS; i++)
		ck_assert_int_eq(umcg_join(p[i], NULL), 0);
	h_watchdog_stop(wd);
	ck_assert_int_eq(umcg_worker_stats(h, &st), 0);
	EXPECT(st.preemptions > 0, "the handed hog was never preempted");
	STORE(&stop, 1);
	ck_assert_int_eq(umcg_join(h, NULL), 0);
	rt_end(rt);
}
END_TEST

static Suite *slice_suite(void)
{
	Suite *s = suite_create("slice");
	TCase *tc = tcase_create("timer");

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, mode_reported);
	tcase_add_loop_test(tc, hog_preempted_by_its_timer, 0, 2);
	tcase_add_test(tc, region_never_cut);
	tcase_add_test(tc, refused_timer_falls_back);
	tcase_add_test(tc, handoff_run_preempted);
	suite_add_tcase(s, tc);
	return s;
}

H_TEST_MAIN(slice_suite, NULL)

// SPDX-License-Identifier: MIT
/*
 * kick.c - umcg_kick() on a task asleep in umcg_wait(): the sleeper wakes
 * and re-reads its state. If another thread made it RUNNING meanwhile, its
 * umcg_wait() returns 0; otherwise it sleeps on. The kicking thread here is
 * a plain pthread, not registered with UMCG, as the runtime's are when
 * they wake a server.
 *
 * Concurrency: the server's state word is the only shared UMCG data. The
 * kicker waits for the state to be exactly RUNNABLE (umcg_wait() cleared
 * UMCG_TF_COND_WAIT: the server is in the syscall), then CASes it
 * RUNNABLE -> RUNNING (seq_cst, a full barrier) before calling
 * umcg_kick(); the kernel orders that CAS against the sleeper's check (see
 * "Kick of a sleeper" in kernel/sched/umcg.c). The other flags are C11
 * seq_cst atomics between the two threads.
 */
#include "kt.h"

/* Long enough that a wake-up that did not happen cannot be mistaken. */
#define SERVER_TIMEOUT_MS 10000
/* A wait that a kick ended must have ended well before that. */
#define KICKED_WITHIN_MS 5000
#define RACE_ROUNDS 200
#define RACE_TIMEOUT_MS 2000

static struct umcg_task server_task __attribute__((aligned(64)));
static _Atomic pid_t server_tid;
static _Atomic int server_returned;
static _Atomic int round_no;

/* Spin (yielding) until the server is inside umcg_wait() or @ms passes. */
static int wait_server_in_wait(unsigned int ms)
{
	uint64_t end = kt_now() + ms * KT_MS;

	while (kt_state(&server_task) != UMCG_TASK_RUNNABLE) {
		if (kt_now() > end)
			return 0;
		sched_yield();
	}
	return 1;
}

static int make_running(void)
{
	uint32_t expect = UMCG_TASK_RUNNABLE;

	return atomic_compare_exchange_strong((_Atomic uint32_t *)&server_task.state,
					      &expect, UMCG_TASK_RUNNING);
}

struct kick_result {
	int in_wait;
	int kick_plain;
	int slept_on;
	uint32_t state_after_plain;
	int cas;
	int kick_running;
};

static void *kicker_main(void *arg)
{
	struct kick_result *r = arg;

	r->in_wait = wait_server_in_wait(2000);
	if (!r->in_wait)
		return NULL;
	/* Let it really fall asleep. */
	usleep(50000);
	/* A kick alone changes nothing: the server must sleep on. */
	r->kick_plain = kt_kick(0, server_tid);
	usleep(200000);
	r->state_after_plain = kt_state(&server_task);
	r->slept_on = !server_returned && r->state_after_plain == UMCG_TASK_RUNNABLE;
	r->cas = make_running();
	r->kick_running = kt_kick(0, server_tid);
	return NULL;
}

static void check_kick_wakes(void)
{
	struct kick_result r = { 0 };
	pthread_t th;
	uint64_t t0, el;
	uint32_t st;
	int ret;

	kt_set_state(&server_task, UMCG_TASK_RUNNABLE | UMCG_TF_COND_WAIT);
	pthread_create(&th, NULL, kicker_main, &r);
	t0 = kt_now();
	ret = kt_wait(0, kt_now() + SERVER_TIMEOUT_MS * KT_MS);
	el = (kt_now() - t0) / KT_MS;
	server_returned = 1;
	pthread_join(th, NULL);
	st = kt_state(&server_task);

	KT_CHECK("kick_server_in_wait", r.in_wait, "state %#x", st);
	KT_CHECK("kick_from_unregistered_thread", r.kick_plain == 0, "got %d", r.kick_plain);
	KT_CHECK("kick_alone_sleeps_on", r.slept_on, "returned early or state %#x",
		 r.state_after_plain);
	KT_CHECK("kick_cas_running", r.cas, "the CAS RUNNABLE -> RUNNING failed");
	KT_CHECK("kick_running_ret", r.kick_running == 0, "got %d", r.kick_running);
	KT_CHECK("kick_ends_wait", ret == 0 && el < KICKED_WITHIN_MS,
		 "umcg_wait %d after %llu ms", ret, (unsigned long long)el);
	KT_CHECK("kick_state_running", st == UMCG_TASK_RUNNING, "state %#x", st);
}

/*
 * The CAS and the kick right as the server goes to sleep, many times: a
 * lost wake-up shows as a wait that runs into its timeout.
 */
static void *racer_main(void *arg)
{
	int *fails = arg, k;

	for (k = 0; k < RACE_ROUNDS; k++) {
		uint64_t end = kt_now() + 2 * RACE_TIMEOUT_MS * KT_MS;

		while (round_no != k && kt_now() < end)
			sched_yield();
		if (round_no != k || !wait_server_in_wait(RACE_TIMEOUT_MS) ||
		    !make_running() || kt_kick(0, server_tid)) {
			(*fails)++;
			return NULL;
		}
	}
	return NULL;
}

static void check_kick_race(void)
{
	int fails = 0, slow = 0, bad_ret = 0, k, ret;
	uint64_t t0, worst = 0, el;
	pthread_t th;

	round_no = -1;
	pthread_create(&th, NULL, racer_main, &fails);
	for (k = 0; k < RACE_ROUNDS; k++) {
		kt_set_state(&server_task, UMCG_TASK_RUNNABLE | UMCG_TF_COND_WAIT);
		round_no = k;
		t0 = kt_now();
		ret = kt_wait(0, kt_now() + RACE_TIMEOUT_MS * KT_MS);
		el = kt_now() - t0;
		if (el > worst)
			worst = el;
		if (ret)
			bad_ret++;
		if (el >= RACE_TIMEOUT_MS * KT_MS)
			slow++;
		if (ret || fails)
			break;
	}
	round_no = RACE_ROUNDS;
	pthread_join(th, NULL);
	KT_CHECK("kick_race", k == RACE_ROUNDS && !fails && !slow && !bad_ret,
		 "%d of %d rounds, kicker failures %d, timed out %d, errors %d, worst %llu us",
		 k, RACE_ROUNDS, fails, slow, bad_ret, (unsigned long long)(worst / 1000));
}

int main(void)
{
	int r;

	setvbuf(stdout, NULL, _IOLBF, 0);
	server_tid = kt_gettid();
	r = kt_server_register(&server_task);
	KT_CHECK("kick_server_register", r == 0, "got %d", r);
	if (r)
		return 1;
	check_kick_wakes();
	check_kick_race();
	kt_ctl(UMCG_CTL_UNREGISTER, NULL, 0);
	printf("kick: %d failed\n", kt_failures);
	return kt_failures ? 1 : 0;
}

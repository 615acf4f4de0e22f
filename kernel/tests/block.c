// SPDX-License-Identifier: MIT
/*
 * block.c - a worker that sleeps in the kernel without telling anybody
 * blocks: a plain read() on an empty pipe, and a page fault that
 * userfaultfd keeps asleep until a handler thread resolves it. Both times
 * the server's umcg_wait() must return while the worker is BLOCKED, and
 * once the worker can go on it must come back RUNNABLE on the server's
 * runnable list, and run to the end when the server runs it.
 */
#include "kt.h"

#include <fcntl.h>
#include <linux/userfaultfd.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <sys/mman.h>


static struct umcg_task server_task __attribute__((aligned(64)));
static struct umcg_task worker_task __attribute__((aligned(64)));
static _Atomic pid_t worker_tid;
static _Atomic int worker_done;
static long worker_result;

enum mode { MODE_PIPE, MODE_FAULT };
static enum mode mode;
static int pipefd[2];
static volatile long *fault_area;

static void *worker_main(void *arg)
{
	char c = 0;

	(void)arg;
	worker_tid = kt_gettid();
	kt_worker_init(&worker_task, (pid_t)server_task.server_tid);
	if (kt_ctl(UMCG_CTL_REGISTER | UMCG_CTL_WORKER, &worker_task, CLOCK_MONOTONIC))
		return NULL;
	if (mode == MODE_PIPE)
		worker_result = read(pipefd[0], &c, 1) == 1 ? c : -1;
	else
		worker_result = fault_area[1];
	worker_done = 1;
	kt_ctl(UMCG_CTL_UNREGISTER, NULL, 0);
	return NULL;
}

/* userfaultfd handler: report the fault, then resolve it when told to. */
static int uffd = -1;
static _Atomic int fault_seen;
static _Atomic int fault_go;

static void *uffd_main(void *arg)
{
	static long page[4096 / sizeof(long)] __attribute__((aligned(4096)));
	struct uffd_msg msg;
	struct uffdio_copy copy;
	struct pollfd pfd = { .fd = uffd, .events = POLLIN };

	(void)arg;
	if (poll(&pfd, 1, 5000) != 1 || read(uffd, &msg, sizeof(msg)) != sizeof(msg) ||
	    msg.event != UFFD_EVENT_PAGEFAULT)
		return NULL;
	fault_seen = 1;
	while (!fault_go)
		usleep(1000);
	page[1] = 4242;
	copy.dst = msg.arg.pagefault.address & ~4095ull;
	copy.src = (uintptr_t)page;
	copy.len = 4096;
	copy.mode = 0;
	copy.copy = 0;
	ioctl(uffd, UFFDIO_COPY, &copy);
	return NULL;
}

static int setup_uffd(void)
{
	struct uffdio_api api = { .api = UFFD_API };
	struct uffdio_register reg;

	uffd = syscall(SYS_userfaultfd, O_CLOEXEC);
	if (uffd < 0 || ioctl(uffd, UFFDIO_API, &api))
		return -errno;
	fault_area = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (fault_area == MAP_FAILED)
		return -errno;
	reg.range.start = (uintptr_t)fault_area;
	reg.range.len = 4096;
	reg.mode = UFFDIO_REGISTER_MODE_MISSING;
	if (ioctl(uffd, UFFDIO_REGISTER, &reg))
		return -errno;
	return 0;
}

static void run(const char *name, enum mode m)
{
	char n[128];
	pthread_t th, uth;
	int r, ret, listed;
	uint32_t st;
	uint64_t end;

	mode = m;
	worker_done = 0;
	if (m == MODE_PIPE) {
		r = pipe(pipefd) ? -errno : 0;
	} else {
		r = setup_uffd();
		if (!r)
			pthread_create(&uth, NULL, uffd_main, NULL);
	}
	snprintf(n, sizeof(n), "%s_setup", name);
	KT_CHECK(n, r == 0, "got %d", r);
	if (r)
		return;

	r = kt_server_register(&server_task);
	snprintf(n, sizeof(n), "%s_server_register", name);
	KT_CHECK(n, r == 0, "got %d", r);
	if (r)
		return;
	pthread_create(&th, NULL, worker_main, NULL);
	listed = kt_server_until_listed(&server_task, &worker_task, 2000);
	snprintf(n, sizeof(n), "%s_worker_listed", name);
	KT_CHECK(n, listed, "worker never became runnable");
	if (!listed)
		goto stuck;

	/* Run the worker; it blocks, which must wake us well before 3 s. */
	kt_server_wait(&server_task, worker_tid, 3000, &ret);
	st = kt_state(&worker_task);
	snprintf(n, sizeof(n), "%s_server_woken", name);
	KT_CHECK(n, ret == 0, "umcg_wait %d (worker state %#x)", ret, st);
	snprintf(n, sizeof(n), "%s_worker_blocked", name);
	KT_CHECK(n, st == UMCG_TASK_BLOCKED && worker_task.blocked_ts != 0 && !worker_done,
		 "state %#x blocked_ts %llu done %d", st,
		 (unsigned long long)worker_task.blocked_ts, worker_done);
	if (m == MODE_FAULT) {
		/* The handler thread may read the event after we woke. */
		end = kt_now() + 2000 * KT_MS;
		while (!fault_seen && kt_now() < end)
			usleep(1000);
		snprintf(n, sizeof(n), "%s_handler_saw_fault", name);
		KT_CHECK(n, fault_seen, "no fault event");
	}

	/* Let the sleep end: the worker must come back RUNNABLE, listed. */
	if (m == MODE_PIPE)
		r = write(pipefd[1], "x", 1) == 1 ? 0 : -errno;
	else
		fault_go = 1;
	listed = kt_server_until_listed(&server_task, &worker_task, 2000);
	st = kt_state(&worker_task);
	snprintf(n, sizeof(n), "%s_unblocked_listed", name);
	KT_CHECK(n, listed && st == UMCG_TASK_RUNNABLE && !worker_done &&
		 worker_task.runnable_ts >= worker_task.blocked_ts,
		 "listed %d state %#x done %d", listed, st, worker_done);
	if (!listed)
		goto stuck;

	kt_server_wait(&server_task, worker_tid, 100, &ret);
	end = kt_now() + 2000 * KT_MS;
	while (!worker_done && kt_now() < end)
		kt_server_wait(&server_task, 0, 10, &ret);
	snprintf(n, sizeof(n), "%s_worker_result", name);
	KT_CHECK(n, worker_done && worker_result == (m == MODE_PIPE ? 'x' : 4242),
		 "done %d result %ld", worker_done, worker_result);
	pthread_join(th, NULL);
	if (m == MODE_FAULT)
		pthread_join(uth, NULL);
	kt_ctl(UMCG_CTL_UNREGISTER, NULL, 0);
	return;
stuck:
	printf("block: %s: worker stuck, exiting\n", name);
	exit(1);
}

int main(void)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	run("pipe", MODE_PIPE);
	run("fault", MODE_FAULT);
	printf("block: %d failed\n", kt_failures);
	return kt_failures ? 1 : 0;
}

// SPDX-License-Identifier: MIT
/*
 * forkexec.c - registration does not survive fork() or exec: the child of
 * a registered server, and a registered server after execve(), are
 * unregistered (umcg_wait() says -EINVAL) and may register afresh. Also a
 * worker may fork: its child is unregistered too.
 */
#include "kt.h"

#include <sys/wait.h>


static struct umcg_task task __attribute__((aligned(64)));
static struct umcg_task worker_task __attribute__((aligned(64)));

/* In a process that should not be registered: 0 if all is as expected. */
static int fresh_process_checks(void)
{
	int r = kt_wait(0, 0);

	if (r != -EINVAL) {
		printf("child: umcg_wait %d, want -EINVAL\n", r);
		return 1;
	}
	r = kt_kick(0, kt_gettid());
	if (r != -ESRCH) {
		printf("child: umcg_kick self %d, want -ESRCH\n", r);
		return 2;
	}
	/* The inherited copy says RUNNING/own tid of the parent: start over. */
	r = kt_server_register(&task);
	if (r) {
		printf("child: register %d\n", r);
		return 3;
	}
	r = kt_ctl(UMCG_CTL_UNREGISTER, NULL, 0);
	if (r) {
		printf("child: unregister %d\n", r);
		return 4;
	}
	return 0;
}

static int wait_child(pid_t pid)
{
	int status;

	if (pid < 0 || waitpid(pid, &status, 0) != pid)
		return -1;
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

static _Atomic int worker_fork_status = -100;
static _Atomic pid_t worker_tid;

static void *worker_main(void *arg)
{
	pid_t pid;

	worker_tid = kt_gettid();
	kt_worker_init(&worker_task, *(pid_t *)arg);
	if (kt_ctl(UMCG_CTL_REGISTER | UMCG_CTL_WORKER, &worker_task, CLOCK_MONOTONIC))
		return NULL;
	pid = fork();
	if (pid == 0)
		_exit(fresh_process_checks());
	/* waitpid() sleeps: we block, and come back when the server runs us. */
	worker_fork_status = wait_child(pid);
	kt_ctl(UMCG_CTL_UNREGISTER, NULL, 0);
	return NULL;
}

int main(int argc, char **argv)
{
	pid_t pid, server_tid;
	pthread_t th;
	uint64_t end;
	int r, ret;

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc > 1 && !strcmp(argv[1], "--after-exec"))
		return fresh_process_checks();

	r = kt_server_register(&task);
	KT_CHECK("server_register", r == 0, "got %d", r);
	if (r)
		return 1;

	pid = fork();
	if (pid == 0)
		_exit(fresh_process_checks());
	r = wait_child(pid);
	KT_CHECK("fork_child_unregistered", r == 0, "child status %d", r);

	/* Still registered here. */
	r = kt_kick(0, kt_gettid());
	KT_CHECK("fork_parent_registered", r == 0, "kick self %d", r);

	pid = fork();
	if (pid == 0) {
		char *args[] = { argv[0], "--after-exec", NULL };

		if (kt_server_register(&task))
			_exit(10);
		execv("/proc/self/exe", args);
		_exit(11);
	}
	r = wait_child(pid);
	KT_CHECK("exec_unregisters", r == 0, "child status %d", r);

	server_tid = kt_gettid();
	pthread_create(&th, NULL, worker_main, &server_tid);
	end = kt_now() + 3000 * KT_MS;
	while (worker_fork_status == -100 && kt_now() < end) {
		/* Run the worker whenever it is runnable; it is our only one. */
		if (kt_server_wait(&task, 0, 20, &ret) == &worker_task)
			kt_server_wait(&task, worker_tid, 100, &ret);
	}
	KT_CHECK("worker_fork_child_unregistered", worker_fork_status == 0, "status %d",
		 worker_fork_status);
	if (worker_fork_status == -100) {
		printf("forkexec: worker stuck, exiting\n");
		return 1;
	}
	pthread_join(th, NULL);
	kt_ctl(UMCG_CTL_UNREGISTER, NULL, 0);
	printf("forkexec: %d failed\n", kt_failures);
	return kt_failures ? 1 : 0;
}

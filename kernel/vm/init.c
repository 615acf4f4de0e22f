// SPDX-License-Identifier: MIT
/*
 * init.c - PID 1 of the libumcg test VM.
 *
 * Built statically and packed into the initramfs by kernel/run-vm-tests.
 * It mounts the pseudo file systems, then runs the plan in /plan, one line
 * per step:
 *
 *	<name> <timeout-seconds> [VAR=value ...] <program> [args ...]
 *
 * Each step runs in its own process group with the given environment
 * additions; it is killed (whole group) when its timeout passes. Output goes
 * to the console, framed by lines the host script parses:
 *
 *	@@@ BEGIN <name>
 *	@@@ END <name> status=<exit code>|signal=<n>|timeout
 *	@@@ ALLDONE
 *
 * Then init ends the VM with reboot(RB_AUTOBOOT): QEMU runs with -no-reboot,
 * so a reboot makes it exit. Nothing here is specific to UMCG.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/reboot.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MAX_ARGS 64

static void mount_or_warn(const char *src, const char *dst, const char *type)
{
	mkdir(dst, 0755);
	if (mount(src, dst, type, 0, NULL) && errno != EBUSY)
		printf("init: mount %s on %s: %s\n", type, dst, strerror(errno));
}

static void setup_console(void)
{
	int fd = open("/dev/console", O_RDWR);

	if (fd < 0)
		return;
	dup2(fd, 0);
	dup2(fd, 1);
	dup2(fd, 2);
	if (fd > 2)
		close(fd);
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/*
 * Run one step. Returns after the child (and its process group) is gone.
 */
static void run_step(char *name, int timeout_s, char **argv, int argc)
{
	char *envs[MAX_ARGS];
	int nenv = 0, i, status = 0;
	double start, deadline;
	pid_t pid, w;
	int timed_out = 0;

	while (argc > 0 && strchr(argv[0], '=') && argv[0][0] != '/') {
		envs[nenv++] = argv[0];
		argv++;
		argc--;
	}
	if (argc == 0) {
		printf("@@@ END %s status=127\n", name);
		return;
	}

	printf("@@@ BEGIN %s\n", name);
	fflush(stdout);
	start = now_s();
	deadline = start + timeout_s;

	pid = fork();
	if (pid < 0) {
		printf("@@@ END %s status=126\n", name);
		return;
	}
	if (pid == 0) {
		setpgid(0, 0);
		for (i = 0; i < nenv; i++)
			putenv(envs[i]);
		execv(argv[0], argv);
		printf("init: exec %s: %s\n", argv[0], strerror(errno));
		_exit(127);
	}
	setpgid(pid, pid);

	for (;;) {
		w = waitpid(pid, &status, WNOHANG);
		if (w == pid)
			break;
		if (now_s() > deadline) {
			kill(-pid, SIGKILL);
			kill(pid, SIGKILL);
			waitpid(pid, &status, 0);
			timed_out = 1;
			break;
		}
		usleep(20000);
	}
	/* Kill whatever the step left behind in its group, then reap. */
	kill(-pid, SIGKILL);
	while (waitpid(-1, NULL, WNOHANG) > 0)
		;

	if (timed_out)
		printf("@@@ END %s timeout (%.1fs)\n", name, now_s() - start);
	else if (WIFEXITED(status))
		printf("@@@ END %s status=%d (%.1fs)\n", name, WEXITSTATUS(status), now_s() - start);
	else
		printf("@@@ END %s signal=%d (%.1fs)\n", name, WTERMSIG(status), now_s() - start);
	fflush(stdout);
}

/* The first line of @path without its newline, or "?". */
static const char *read_line(const char *path, char *buf, size_t size)
{
	FILE *f = fopen(path, "r");

	if (!f || !fgets(buf, (int)size, f))
		snprintf(buf, size, "?");
	if (f)
		fclose(f);
	buf[strcspn(buf, "\n")] = 0;
	return buf;
}

int main(void)
{
	char line[4096], cs[64];
	FILE *plan;

	mount_or_warn("devtmpfs", "/dev", "devtmpfs");
	setup_console();
	mount_or_warn("proc", "/proc", "proc");
	mount_or_warn("sysfs", "/sys", "sysfs");
	/* The initramfs root is writable: /tmp needs no file system of its own. */
	mkdir("/tmp", 01777);
	chmod("/tmp", 01777);
	setvbuf(stdout, NULL, _IOLBF, 0);

	printf("init: up, %ld CPUs, clocksource %s\n", sysconf(_SC_NPROCESSORS_ONLN),
	       read_line("/sys/devices/system/clocksource/clocksource0/current_clocksource",
			 cs, sizeof(cs)));
	plan = fopen("/plan", "r");
	if (!plan) {
		printf("init: no /plan: %s\n", strerror(errno));
	} else {
		while (fgets(line, sizeof(line), plan)) {
			char *argv[MAX_ARGS + 1], *name, *tmo, *tok, *save;
			int argc = 0;

			if (line[0] == '#' || line[0] == '\n')
				continue;
			name = strtok_r(line, " \t\n", &save);
			tmo = strtok_r(NULL, " \t\n", &save);
			if (!name || !tmo)
				continue;
			while (argc < MAX_ARGS && (tok = strtok_r(NULL, " \t\n", &save)))
				argv[argc++] = tok;
			argv[argc] = NULL;
			run_step(name, atoi(tmo), argv, argc);
		}
		fclose(plan);
	}
	printf("@@@ ALLDONE\n");
	fflush(stdout);
	sync();
	reboot(RB_AUTOBOOT);
	/* Not reached unless reboot failed; panic=-1 then ends the VM. */
	return 1;
}

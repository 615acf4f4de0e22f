/* SPDX-License-Identifier: MIT */
/*
 * backend.c - choosing the backend once per process, and the public entry
 * points that forward to it.
 *
 * Protocol: `active` is written once, under `lock`, with a release store;
 * readers take the fast path with an acquire load that pairs with it, so a
 * reader that sees the pointer also sees `reason`, and everything the
 * backend's detection wrote. A reader that sees NULL takes `lock` and
 * decides. `decided` and `decided_err` record a choice that failed for
 * good (UMCG_BACKEND=kernel on a kernel without UMCG, or a value that does
 * not parse); they are read and written only under `lock`, which orders
 * them, so they are plain variables. An explicit umcg_backend_select()
 * that fails with -ENOSYS decides nothing.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "atomics.h"
#include "backend.h"

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static const struct umcg__backend_ops *active;
static int decided;
static int decided_err;
static char reason[320] = "not chosen yet";

/* The version string, made from the macros of <umcg/umcg.h> (their one home). */
#define STR_(x) #x
#define STR(x) STR_(x)

UMCG_API const char *umcg_version(void)
{
	return STR(UMCG_VERSION_MAJOR) "." STR(UMCG_VERSION_MINOR) "." STR(UMCG_VERSION_PATCH);
}

UMCG_API const char *umcg_backend_name(int backend)
{
	switch (backend) {
	case UMCG_BACKEND_AUTO:
		return "auto";
	case UMCG_BACKEND_KERNEL:
		return "kernel";
	case UMCG_BACKEND_EMULATED:
		return "emulated";
	default:
		return "invalid";
	}
}

/* Called with `lock` held and nothing decided yet. */
static int choose_locked(enum umcg_backend want, const char *origin)
{
	char why[256];
	int ret;

	if (want == UMCG_BACKEND_EMULATED) {
		snprintf(reason, sizeof(reason), "%s: emulation requested", origin);
		umcg__store(&active, &umcg__emulated_ops, umcg__release);
		return 0;
	}
	ret = umcg__kernel_detect(why, sizeof(why));
	if (ret == 0) {
		snprintf(reason, sizeof(reason), "%s: %s", origin, why);
		/* Pairs with the acquire load in umcg__backend(). */
		umcg__store(&active, &umcg__kernel_ops, umcg__release);
		return 0;
	}
	if (want == UMCG_BACKEND_KERNEL || ret == -EINVAL) {
		snprintf(reason, sizeof(reason), "%s: kernel backend unavailable: %s", origin, why);
		return ret;
	}
	snprintf(reason, sizeof(reason), "%s: %s; using the emulation", origin, why);
	umcg__store(&active, &umcg__emulated_ops, umcg__release);
	return 0;
}

static void decide_from_env_locked(void)
{
	const char *env = getenv("UMCG_BACKEND");
	enum umcg_backend want = UMCG_BACKEND_AUTO;
	int ret;

	if (env && *env) {
		if (!strcmp(env, "auto")) {
			want = UMCG_BACKEND_AUTO;
		} else if (!strcmp(env, "kernel")) {
			want = UMCG_BACKEND_KERNEL;
		} else if (!strcmp(env, "emulated")) {
			want = UMCG_BACKEND_EMULATED;
		} else {
			snprintf(reason, sizeof(reason),
				 "UMCG_BACKEND=%.64s is not one of auto, kernel, emulated", env);
			decided_err = -EINVAL;
			decided = 1;
			return;
		}
	}
	ret = choose_locked(want, env && *env ?
					  (want == UMCG_BACKEND_AUTO   ? "UMCG_BACKEND=auto" :
					   want == UMCG_BACKEND_KERNEL ? "UMCG_BACKEND=kernel" :
									 "UMCG_BACKEND=emulated") :
					  "auto");
	decided_err = ret;
	decided = 1;
}

const struct umcg__backend_ops *umcg__backend(int *err)
{
	/* Pairs with the release stores in choose_locked(). */
	const struct umcg__backend_ops *ops = umcg__load(&active, umcg__acquire);

	if (ops)
		return ops;
	pthread_mutex_lock(&lock);
	if (!active && !decided)
		decide_from_env_locked();
	ops = active;
	*err = ops ? 0 : decided_err;
	pthread_mutex_unlock(&lock);
	return ops;
}

UMCG_API int umcg_backend_select(enum umcg_backend backend)
{
	const struct umcg__backend_ops *want_ops;
	int ret = 0;

	if (backend != UMCG_BACKEND_AUTO && backend != UMCG_BACKEND_KERNEL &&
	    backend != UMCG_BACKEND_EMULATED)
		return -EINVAL;
	pthread_mutex_lock(&lock);
	if (active || decided) {
		want_ops = backend == UMCG_BACKEND_KERNEL   ? &umcg__kernel_ops :
			   backend == UMCG_BACKEND_EMULATED ? &umcg__emulated_ops :
							      active;
		ret = (active && active == want_ops) ? 0 : -EBUSY;
	} else {
		ret = choose_locked(backend, "umcg_backend_select()");
		if (ret == -EINVAL && backend == UMCG_BACKEND_AUTO) {
			decided_err = ret;
			decided = 1;
		}
	}
	pthread_mutex_unlock(&lock);
	return ret;
}

UMCG_API int umcg_backend_active(void)
{
	int err = 0;
	const struct umcg__backend_ops *ops = umcg__backend(&err);

	if (!ops)
		return err;
	return ops == &umcg__kernel_ops ? UMCG_BACKEND_KERNEL : UMCG_BACKEND_EMULATED;
}

UMCG_API const char *umcg_backend_reason(void)
{
	const char *r;

	pthread_mutex_lock(&lock);
	r = reason;
	pthread_mutex_unlock(&lock);
	return r;
}

#define FORWARD(call)                                                        \
	do {                                                                 \
		int err_ = 0;                                                \
		const struct umcg__backend_ops *ops_ = umcg__backend(&err_); \
		if (!ops_)                                                   \
			return err_;                                         \
		return ops_->call;                                           \
	} while (0)

UMCG_API int umcg_ctl(uint32_t flags, struct umcg_task *self, clockid_t which_clock)
{
	FORWARD(ctl(flags, self, which_clock));
}

UMCG_API int umcg_wait(uint32_t flags, uint64_t abs_timeout)
{
	FORWARD(wait(flags, abs_timeout));
}

UMCG_API int umcg_kick(uint32_t flags, pid_t tid)
{
	FORWARD(kick(flags, tid));
}

UMCG_API int umcg_block_begin(void)
{
	FORWARD(block_begin());
}

UMCG_API int umcg_block_end(void)
{
	FORWARD(block_end());
}

UMCG_API int umcg_kick_signal(void)
{
	FORWARD(kick_signal());
}

UMCG_API int umcg_preempt(struct umcg_task *worker, pid_t tid)
{
	uint32_t old;
	int ret;

	if (!worker || ((uintptr_t)worker & (UMCG_TASK_ALIGN - 1)))
		return -EINVAL;
	/*
	 * A worker that detection made BLOCKED and that preempts itself is
	 * back under its server first, RUNNING, as on the kernel (§10 rule
	 * 15), rather than refused with -EAGAIN.
	 */
	umcg__settle();
	/*
	 * Reject a bad @tid before the flag goes in: a kernel acts on
	 * TF_PREEMPT at the caller's own next return to user space when
	 * @worker is the caller. umcg_kick() checks the tid before the flags,
	 * so flags = 1 answers -ESRCH for a bad tid and -EINVAL, doing
	 * nothing, for a good one.
	 */
	ret = umcg_kick(1, tid);
	if (ret != -EINVAL)
		return ret ? ret : -EINVAL;
	/*
	 * Set TF_PREEMPT only while the worker is RUNNING. The seq_cst CAS
	 * orders the flag before the kick's look at the target (see the
	 * kick protocol in emulated.c), and on the kernel the syscall
	 * boundary does the same.
	 */
	old = umcg__load(&worker->state, umcg__relaxed);
	do {
		if ((old & UMCG_TASK_MASK) != UMCG_TASK_RUNNING)
			return -EAGAIN;
	} while (!umcg__cas(&worker->state, &old, old | UMCG_TF_PREEMPT, umcg__seq_cst));
	ret = umcg_kick(0, tid);
	if (ret && !(old & UMCG_TF_PREEMPT)) {
		/* Undo what this call set, so that it changes nothing. */
		old |= UMCG_TF_PREEMPT;
		umcg__cas(&worker->state, &old, old & ~UMCG_TF_PREEMPT, umcg__seq_cst);
	}
	return ret;
}

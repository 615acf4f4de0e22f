/* SPDX-License-Identifier: MIT */
/*
 * sync.c - <umcg/sync.h>: mutexes, condition variables and semaphores.
 *
 * Every object is a word or two of state plus a FIFO of waiters, the
 * waiters' nodes living on their stacks. An internal lock per object
 * (`lock`, see "The internal lock") guards the FIFO and every change that
 * must agree with it; the uncontended paths are one atomic operation on
 * the state word and never take it.
 *
 * A waiter (struct waiter) is woken exactly once, by whoever takes its
 * node off the FIFO under the internal lock: that party then owns the
 * node and completes the wait for it (hands it the mutex, the unit of the
 * semaphore, or the signal) before it stores `word` = 1. A runtime worker
 * waiting without a deadline parks on its second park word (rt_sync.h):
 * only these wake-ups use that word, so the program's own umcg_park()
 * permits are never taken or left behind. Everyone else, and every timed
 * wait, sleeps on `word` with FUTEX_WAIT, inside umcg_block_begin()/_end()
 * so that a worker's server runs others meanwhile.
 *
 * Wake-up of node n (wake()):
 *	w = n->w                              read before the store: n may be
 *	                                      gone right after it
 *	worker:  hold(w); word = 1 (release); sync_unpark(w); put(w)
 *	thread:  word = 1 (release); FUTEX_WAKE(&word)
 * The waiter loops until it loads word == 1 (acquire, pairing with the
 * release store, so it sees everything its waker did before: the owner
 * field, a unit, the caller's critical section). A worker parks again
 * while it loads 0: a wake-up on the second word that is not for this
 * wait (a late unpark of an earlier wait, whose waiter saw word == 1 first
 * and left) only makes it look once more. A worker can see word == 1 and
 * run on, exit and be joined while its waker is still inside
 * sync_unpark(); the hold keeps its memory until the put (runtime.c,
 * "Holds"). A futex waiter can be gone when FUTEX_WAKE runs: a wake of an
 * address nobody waits on does nothing.
 *
 * Timeouts: a timed waiter whose futex wait times out takes the internal
 * lock. If its node is still queued, it takes it off and the wait fails
 * with -ETIMEDOUT (for a mutex it also clears the "waiters" bit if the
 * FIFO is empty now). If not, a waker has it and is a few instructions
 * from storing word = 1: it waits for that store, and the wait succeeds.
 * So a wait either times out having changed nothing, or completes as if
 * it had been woken before its deadline.
 *
 * Mutex: `owner` = tid of the holder | OWNER_WAITERS, 0 when free.
 *	lock:    CAS 0 -> tid (acquire). Else, under the internal lock: CAS
 *	         0 -> tid once more, or set OWNER_WAITERS with a CAS on the
 *	         value seen, queue the node, unlock, wait.
 *	unlock:  CAS tid -> 0 (release). If OWNER_WAITERS is set that fails:
 *	         under the internal lock take the oldest node, store owner =
 *	         its tid (| OWNER_WAITERS if more wait), unlock, wake it.
 * Invariant: a node is queued only while OWNER_WAITERS is set, and the
 * bit is set or cleared only under the internal lock; so an unlock whose
 * CAS succeeded saw no waiters, and one whose CAS failed takes the lock
 * after the queuer let go and finds its node. Ownership passes to the
 * woken waiter itself, never through 0, so no newcomer overtakes it.
 *
 * Condition variable: a waiter queues its node under the condition's lock
 * and only then unlocks the mutex, so a signaller that holds the mutex
 * after that finds the node. signal takes the oldest node, broadcast the
 * whole FIFO (under the lock), and each then wakes outside the lock. A
 * woken waiter takes the mutex with umcg_mutex_lock(), as any thread.
 *
 * Semaphore: `value` = units available; a waiter queues only when it
 * sees 0 under the lock, and a post under the lock either hands its unit
 * to the oldest node (value stays 0) or adds it. The fast paths (a wait
 * that finds a unit, a trywait) CAS `value` down without the lock; a post
 * always takes it, which keeps "a queued node means value == 0" true.
 *
 * The internal lock: umcg__lock of lock.h, taken with
 * umcg__lock_announced(): workers do take it, and can be preempted while
 * they hold it, so a thread that must sleep on it announces the sleep
 * (umcg_block_begin()) and retakes the lock only once it runs again.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <umcg/sync.h>

#include "atomics.h"
#include "lock.h"
#include "rt_sync.h"
#include "syscall.h"

#define OWNER_WAITERS 0x80000000u
#define OWNER_TID 0x7fffffffu

/*
 * A node's place on a FIFO (waiters of a mutex, a condition variable or a
 * semaphore; senders or receivers of a channel). The first member of every
 * node, so a node and its link convert into each other.
 */
struct qlink {
	struct qlink *next, *prev;
	bool queued; /* on the FIFO; under the object's lock */
};

struct waiter {
	struct qlink q;
	struct umcg_worker *w; /* parks on its second word; NULL: futex */
	uint32_t word; /* 0 waiting, 1 woken */
	uint32_t tid;
};

/* ---- the calling thread's tid ------------------------------------------ */

static __thread uint32_t self_tid;
static pthread_once_t tid_once = PTHREAD_ONCE_INIT;

/* In a fork() child the one thread there has a new tid. */
static void tid_fork_child(void)
{
	self_tid = 0;
}

static void tid_init_once(void)
{
	pthread_atfork(NULL, NULL, tid_fork_child);
}

static uint32_t my_tid(void)
{
	if (__builtin_expect(self_tid == 0, 0)) {
		pthread_once(&tid_once, tid_init_once);
		self_tid = (uint32_t)umcg__gettid();
	}
	return self_tid;
}

static uint64_t now_mono(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* ---- the internal lock ------------------------------------------------- */

/* The objects' `lock` words are umcg__lock words (lock.h). */
static void lock(uint32_t *w)
{
	umcg__lock_announced((struct umcg__lock *)(void *)w);
}

static void unlock(uint32_t *w)
{
	umcg__unlock((struct umcg__lock *)(void *)w);
}

/* ---- the FIFO of waiters (under the object's lock) -------------------- */

/*
 * The links are written with release stores although the lock orders every
 * access the library makes: the suite's queue_len() walks them without the
 * lock, to see how many wait, and that must not be a data race.
 */
static void fifo_push(void **head, void **tail, struct qlink *n)
{
	struct qlink *t = *tail;

	umcg__store(&n->next, NULL, umcg__release);
	n->prev = t;
	if (t)
		umcg__store(&t->next, n, umcg__release);
	else
		umcg__store(head, (void *)n, umcg__release);
	umcg__store(tail, (void *)n, umcg__release);
	n->queued = true;
}

static void fifo_unlink(void **head, void **tail, struct qlink *n)
{
	if (n->prev)
		umcg__store(&n->prev->next, n->next, umcg__release);
	else
		umcg__store(head, (void *)n->next, umcg__release);
	if (n->next)
		umcg__store(&n->next->prev, n->prev, umcg__release);
	else
		umcg__store(tail, (void *)n->prev, umcg__release);
	n->queued = false;
}

static struct qlink *fifo_pop(void **head, void **tail)
{
	struct qlink *n = *head;

	if (n)
		fifo_unlink(head, tail, n);
	return n;
}

/* ---- waiting and waking ------------------------------------------------ */

/* A node for the calling thread; @timed waits always use the futex. */
static void waiter_init(struct waiter *n, bool timed)
{
	n->q = (struct qlink){ NULL, NULL, false };
	n->w = timed ? NULL : umcg_self();
	n->word = 0;
	n->tid = my_tid();
}

static void wake(struct waiter *n)
{
	struct umcg_worker *w = n->w;

	if (w) {
		umcg__worker_hold(w);
		umcg__store(&n->word, 1, umcg__release);
		umcg__sync_unpark(w);
		umcg__worker_put(w);
		return;
	}
	umcg__store(&n->word, 1, umcg__release);
	umcg__futex_wake(&n->word);
}

/* Sleep on @n's word until it is 1 or @abs passes (NULL: never). */
static void futex_sleep(struct waiter *n, const struct timespec *abs)
{
	bool hooked = umcg_block_begin() == 0;

	while (!umcg__load(&n->word, umcg__acquire)) {
		if (umcg__futex_wait(&n->word, 0, abs, 0) == -ETIMEDOUT)
			break;
	}
	if (hooked)
		umcg_block_end();
}

/*
 * Wait until @n is woken, or until @deadline if @timed (a timed node always
 * sleeps on the futex). Return: whether it was woken.
 */
static bool sleep_woken(struct waiter *n, bool timed, uint64_t deadline)
{
	struct timespec ts;

	if (n->w) {
		while (!umcg__load(&n->word, umcg__acquire)) {
			/* -EDEADLK: a handler inside a switch, which the
			 * header rules out; do not wedge the server. */
			if (umcg__sync_park())
				sched_yield();
		}
		return true;
	}
	ts.tv_sec = (time_t)(deadline / 1000000000ull);
	ts.tv_nsec = (long)(deadline % 1000000000ull);
	futex_sleep(n, timed ? &ts : NULL);
	return umcg__load(&n->word, umcg__acquire);
}

/*
 * Wait until @n is woken, or until @deadline if @timed. Return: 0 when
 * woken; -ETIMEDOUT with @n off the FIFO and the object's lock @l held
 * (the caller fixes up what depends on the FIFO and unlocks).
 */
static int wait_node(struct waiter *n, bool timed, uint64_t deadline, uint32_t *l, void **head,
		     void **tail)
{
	if (sleep_woken(n, timed, deadline))
		return 0;
	lock(l);
	if (n->q.queued) {
		fifo_unlink(head, tail, &n->q);
		return -ETIMEDOUT;
	}
	unlock(l);
	/* A waker took the node and is about to store 1. */
	futex_sleep(n, NULL);
	return 0;
}

/* ---- mutex ------------------------------------------------------------- */

static bool mutex_ok(const struct umcg_mutex *m)
{
	return m && umcg__load(&m->magic, umcg__relaxed) == UMCG_MUTEX_MAGIC_;
}

UMCG_API int umcg_mutex_init(struct umcg_mutex *m)
{
	if (!m)
		return -EINVAL;
	m->owner = 0;
	m->lock = UMCG__LOCK_FREE;
	m->spare = 0;
	m->head = m->tail = NULL;
	umcg__store(&m->magic, UMCG_MUTEX_MAGIC_, umcg__release);
	return 0;
}

static int mutex_lock(struct umcg_mutex *m, bool timed, uint64_t deadline)
{
	uint32_t tid, v = 0;
	struct waiter n;
	int ret;

	if (!mutex_ok(m))
		return -EINVAL;
	tid = my_tid();
	if (umcg__cas(&m->owner, &v, tid, umcg__acquire))
		return 0;
	if ((v & OWNER_TID) == tid)
		return -EDEADLK;
	waiter_init(&n, timed);
	lock(&m->lock);
	for (;;) {
		v = umcg__load(&m->owner, umcg__relaxed);
		if (v == 0) {
			if (umcg__cas(&m->owner, &v, tid, umcg__acquire)) {
				unlock(&m->lock);
				return 0;
			}
			continue;
		}
		if ((v & OWNER_WAITERS) ||
		    umcg__cas(&m->owner, &v, v | OWNER_WAITERS, umcg__relaxed))
			break;
	}
	if (timed && now_mono() >= deadline) {
		if (!m->head)
			umcg__fetch_and(&m->owner, ~OWNER_WAITERS, umcg__relaxed);
		unlock(&m->lock);
		return -ETIMEDOUT;
	}
	fifo_push(&m->head, &m->tail, &n.q);
	unlock(&m->lock);
	ret = wait_node(&n, timed, deadline, &m->lock, &m->head, &m->tail);
	if (ret) {
		if (!m->head)
			umcg__fetch_and(&m->owner, ~OWNER_WAITERS, umcg__relaxed);
		unlock(&m->lock);
		return ret;
	}
	/* The unlocker stored owner = tid before waking us. */
	return 0;
}

UMCG_API int umcg_mutex_lock(struct umcg_mutex *m)
{
	return mutex_lock(m, false, 0);
}

UMCG_API int umcg_mutex_timedlock(struct umcg_mutex *m, uint64_t deadline)
{
	return mutex_lock(m, true, deadline);
}

UMCG_API int umcg_mutex_trylock(struct umcg_mutex *m)
{
	uint32_t v = 0;

	if (!mutex_ok(m))
		return -EINVAL;
	if (umcg__cas(&m->owner, &v, my_tid(), umcg__acquire))
		return 0;
	return (v & OWNER_TID) == my_tid() ? -EDEADLK : -EBUSY;
}

UMCG_API int umcg_mutex_unlock(struct umcg_mutex *m)
{
	uint32_t tid, v;
	struct waiter *n;

	if (!mutex_ok(m))
		return -EINVAL;
	tid = my_tid();
	v = tid;
	if (umcg__cas(&m->owner, &v, 0, umcg__release))
		return 0;
	if ((v & OWNER_TID) != tid)
		return -EPERM;
	lock(&m->lock);
	n = (struct waiter *)fifo_pop(&m->head, &m->tail);
	if (n)
		umcg__store(&m->owner, n->tid | (m->head ? OWNER_WAITERS : 0), umcg__release);
	else
		umcg__store(&m->owner, 0, umcg__release);
	unlock(&m->lock);
	if (n)
		wake(n);
	return 0;
}

UMCG_API int umcg_mutex_destroy(struct umcg_mutex *m)
{
	int ret = 0;

	if (!mutex_ok(m))
		return -EINVAL;
	lock(&m->lock);
	if (umcg__load(&m->owner, umcg__relaxed) || m->head)
		ret = -EBUSY;
	else
		umcg__store(&m->magic, 0, umcg__relaxed);
	unlock(&m->lock);
	return ret;
}

/* ---- condition variable ------------------------------------------------ */

static bool cond_ok(const struct umcg_cond *c)
{
	return c && umcg__load(&c->magic, umcg__relaxed) == UMCG_COND_MAGIC_;
}

UMCG_API int umcg_cond_init(struct umcg_cond *c)
{
	if (!c)
		return -EINVAL;
	c->lock = UMCG__LOCK_FREE;
	c->head = c->tail = NULL;
	umcg__store(&c->magic, UMCG_COND_MAGIC_, umcg__release);
	return 0;
}

static int cond_wait(struct umcg_cond *c, struct umcg_mutex *m, bool timed, uint64_t deadline)
{
	struct waiter n;
	int ret;

	if (!cond_ok(c) || !mutex_ok(m))
		return -EINVAL;
	if ((umcg__load(&m->owner, umcg__relaxed) & OWNER_TID) != my_tid())
		return -EPERM;
	waiter_init(&n, timed);
	lock(&c->lock);
	fifo_push(&c->head, &c->tail, &n.q);
	unlock(&c->lock);
	umcg_mutex_unlock(m);
	ret = wait_node(&n, timed, deadline, &c->lock, &c->head, &c->tail);
	if (ret)
		unlock(&c->lock);
	umcg_mutex_lock(m);
	return ret;
}

UMCG_API int umcg_cond_wait(struct umcg_cond *c, struct umcg_mutex *m)
{
	return cond_wait(c, m, false, 0);
}

UMCG_API int umcg_cond_timedwait(struct umcg_cond *c, struct umcg_mutex *m, uint64_t deadline)
{
	return cond_wait(c, m, true, deadline);
}

/*
 * Nobody waits on @c: nothing to take the lock for. A waiter queues before
 * it unlocks its mutex, so a signaller that holds that mutex sees it here
 * (the mutex orders the two); a waiter that queues after this load is not
 * owed this signal.
 */
static bool cond_idle(struct umcg_cond *c)
{
	return !umcg__load(&c->head, umcg__relaxed);
}

UMCG_API int umcg_cond_signal(struct umcg_cond *c)
{
	struct waiter *n;

	if (!cond_ok(c))
		return -EINVAL;
	if (cond_idle(c))
		return 0;
	lock(&c->lock);
	n = (struct waiter *)fifo_pop(&c->head, &c->tail);
	unlock(&c->lock);
	if (n)
		wake(n);
	return 0;
}

UMCG_API int umcg_cond_broadcast(struct umcg_cond *c)
{
	struct waiter *n, *next;

	if (!cond_ok(c))
		return -EINVAL;
	if (cond_idle(c))
		return 0;
	lock(&c->lock);
	n = c->head;
	for (next = n; next; next = (struct waiter *)next->q.next)
		next->q.queued = false;
	umcg__store(&c->head, NULL, umcg__relaxed);
	umcg__store(&c->tail, NULL, umcg__relaxed);
	unlock(&c->lock);
	for (; n; n = next) {
		next = (struct waiter *)n->q.next; /* before the wake-up: @n may be gone after */
		wake(n);
	}
	return 0;
}

UMCG_API int umcg_cond_destroy(struct umcg_cond *c)
{
	int ret = 0;

	if (!cond_ok(c))
		return -EINVAL;
	lock(&c->lock);
	if (c->head)
		ret = -EBUSY;
	else
		umcg__store(&c->magic, 0, umcg__relaxed);
	unlock(&c->lock);
	return ret;
}

/* ---- semaphore --------------------------------------------------------- */

static bool sem_ok(const struct umcg_sem *s)
{
	return s && umcg__load(&s->magic, umcg__relaxed) == UMCG_SEM_MAGIC_;
}

UMCG_API int umcg_sem_init(struct umcg_sem *s, unsigned int value)
{
	if (!s || value > UMCG_SEM_VALUE_MAX)
		return -EINVAL;
	s->lock = UMCG__LOCK_FREE;
	s->value = value;
	s->spare = 0;
	s->head = s->tail = NULL;
	umcg__store(&s->magic, UMCG_SEM_MAGIC_, umcg__release);
	return 0;
}

/* Take a unit if there is one, without the lock. */
static bool sem_take(struct umcg_sem *s)
{
	uint32_t v = umcg__load(&s->value, umcg__relaxed);

	while (v) {
		if (umcg__cas(&s->value, &v, v - 1, umcg__acquire))
			return true;
	}
	return false;
}

static int sem_wait(struct umcg_sem *s, bool timed, uint64_t deadline)
{
	struct waiter n;
	int ret;

	if (!sem_ok(s))
		return -EINVAL;
	if (sem_take(s))
		return 0;
	waiter_init(&n, timed);
	lock(&s->lock);
	if (sem_take(s)) {
		unlock(&s->lock);
		return 0;
	}
	if (timed && now_mono() >= deadline) {
		unlock(&s->lock);
		return -ETIMEDOUT;
	}
	fifo_push(&s->head, &s->tail, &n.q);
	unlock(&s->lock);
	ret = wait_node(&n, timed, deadline, &s->lock, &s->head, &s->tail);
	if (ret)
		unlock(&s->lock);
	return ret;
}

UMCG_API int umcg_sem_wait(struct umcg_sem *s)
{
	return sem_wait(s, false, 0);
}

UMCG_API int umcg_sem_timedwait(struct umcg_sem *s, uint64_t deadline)
{
	return sem_wait(s, true, deadline);
}

UMCG_API int umcg_sem_trywait(struct umcg_sem *s)
{
	if (!sem_ok(s))
		return -EINVAL;
	return sem_take(s) ? 0 : -EAGAIN;
}

UMCG_API int umcg_sem_post(struct umcg_sem *s)
{
	struct waiter *n;

	if (!sem_ok(s))
		return -EINVAL;
	lock(&s->lock);
	n = (struct waiter *)fifo_pop(&s->head, &s->tail);
	if (!n) {
		if (umcg__load(&s->value, umcg__relaxed) >= UMCG_SEM_VALUE_MAX) {
			unlock(&s->lock);
			return -EOVERFLOW;
		}
		/* Release: pairs with the acquire CAS of sem_take(). */
		umcg__fetch_add(&s->value, 1, umcg__release);
	}
	unlock(&s->lock);
	if (n)
		wake(n);
	return 0;
}

UMCG_API int umcg_sem_getvalue(struct umcg_sem *s)
{
	if (!sem_ok(s))
		return -EINVAL;
	return (int)umcg__load(&s->value, umcg__relaxed);
}

UMCG_API int umcg_sem_destroy(struct umcg_sem *s)
{
	int ret = 0;

	if (!sem_ok(s))
		return -EINVAL;
	lock(&s->lock);
	if (s->head)
		ret = -EBUSY;
	else
		umcg__store(&s->magic, 0, umcg__relaxed);
	unlock(&s->lock);
	return ret;
}

/* ---- channels and select ----------------------------------------------- */

/*
 * A channel: a ring of `cap` elements of `elem` bytes, and two FIFOs of
 * waiting operations, senders (only while the ring is full) and receivers
 * (only while it is empty), all under the channel's internal lock.
 *
 * An operation that must wait (a send, a receive, or every operation of a
 * select) queues one node per operation, all pointing at one `struct
 * sel` on the waiter's stack. Whoever completes one of them first claims
 * the sel with a CAS of `claimed` from 0 to the operation's index + 1;
 * only the claimant moves the data (under that channel's lock, into or out
 * of the waiter's buffer, which the waiter leaves alone until it is
 * woken), sets `result`, and wakes the waiter with wake() as above. A
 * waker that pops a node whose sel is claimed already drops it (that
 * select ended elsewhere). A waiter whose deadline passes claims its own
 * sel (0 -> SEL_TIMEOUT): if that CAS wins nobody else will touch its
 * buffers and it fails with -ETIMEDOUT; if it loses, a claimant is moving
 * the data, and it waits for the wake-up.
 *
 * Before it returns, the waiter takes each of its nodes that is still
 * queued off its channel, under that channel's lock. A claimant or a
 * dropper touches a node (and the sel it points to) only under the lock of
 * the channel it is queued on, so once the waiter has taken each of those
 * locks after its claim, nobody is left touching its stack, except the
 * claimant's wake(), which the wake-up protocol covers.
 *
 * A select takes the locks of all its channels, in address order (so two
 * selects, or a select and a send, never wait for each other's locks in a
 * cycle), polls its operations in a random order (each ready one is as
 * likely to win), and either completes the first ready one or queues all
 * its nodes, and only then unlocks. So between its poll and its queueing
 * no operation of its can become ready unseen, and nobody can claim its
 * sel before every node is queued. A select never matches its own nodes
 * (a send and a receive on one channel in one select): they are not
 * queued yet while it polls.
 *
 * Closing wakes every queued node with -EPIPE (claiming each); later sends
 * fail with -EPIPE, receives drain the ring and then fail with -EPIPE.
 */

#define SEL_TIMEOUT 0xffffffffu
#define SELECT_MAX UMCG_CHAN_SELECT_MAX

struct umcg_chan {
	uint32_t magic;
	uint32_t lock;
	uint32_t closed;
	size_t cap, elem, head, count;
	void *sendq_head, *sendq_tail;
	void *recvq_head, *recvq_tail;
	unsigned char buf[];
};

struct sel {
	struct waiter base; /* w, word, tid */
	uint32_t claimed; /* 0, an operation's index + 1, or SEL_TIMEOUT */
	int result; /* the claimed operation's: 0 or -EPIPE */
};

struct cnode {
	struct qlink q;
	struct sel *sel;
	struct umcg_chan_op *op;
	uint32_t idx;
};

#define CHAN_MAGIC 0x6368616eu

static bool chan_ok(const struct umcg_chan *c)
{
	return c && umcg__load(&c->magic, umcg__relaxed) == CHAN_MAGIC;
}

UMCG_API int umcg_chan_create(struct umcg_chan **chp, size_t capacity, size_t elem_size)
{
	struct umcg_chan *c;
	size_t bytes;

	if (!chp)
		return -EINVAL;
	if (elem_size && capacity > (SIZE_MAX - sizeof(*c)) / elem_size)
		return -EINVAL;
	bytes = sizeof(*c) + capacity * elem_size;
	c = calloc(1, bytes);
	if (!c)
		return -ENOMEM;
	c->cap = capacity;
	c->elem = elem_size;
	umcg__store(&c->magic, CHAN_MAGIC, umcg__release);
	*chp = c;
	return 0;
}

/*
 * The oldest node of a queue whose select we could claim, claimed for its
 * operation, and off the queue; NULL if none. Nodes whose select ended
 * elsewhere are dropped on the way. Under the channel's lock. (Our own
 * nodes are never on a queue when we look: a select queues them only
 * after its poll, under all its locks.)
 */
static struct cnode *cq_claim(void **head, void **tail)
{
	struct cnode *n;
	uint32_t open;

	while ((n = (struct cnode *)fifo_pop(head, tail))) {
		open = 0;
		/* Acquire: the claim orders our copy after the waiter's
		 * setup of its buffers; see the wake-up for the way back. */
		if (umcg__cas(&n->sel->claimed, &open, n->idx + 1, umcg__acq_rel))
			return n;
	}
	return NULL;
}

static void *slot(struct umcg_chan *c, size_t i)
{
	return c->buf + ((c->head + i) % c->cap) * c->elem;
}

static void copy(void *dst, const void *src, size_t len)
{
	if (len)
		memcpy(dst, src, len);
}

/*
 * Try operation @op on its channel (locked). Return true if it completed
 * (op->result set), with *@wake the node to wake after unlocking (or NULL).
 */
static bool chan_try(struct umcg_chan *c, struct umcg_chan_op *op, struct cnode **wake)
{
	struct cnode *n;

	*wake = NULL;
	if (op->op == UMCG_CHAN_SEND) {
		if (c->closed) {
			op->result = -EPIPE;
			return true;
		}
		n = cq_claim(&c->recvq_head, &c->recvq_tail);
		if (n) {
			/* A receiver waits: the ring is empty. */
			copy(n->op->elem, op->elem, c->elem);
			n->sel->result = 0;
			*wake = n;
			op->result = 0;
			return true;
		}
		if (c->count < c->cap) {
			copy(slot(c, c->count), op->elem, c->elem);
			c->count++;
			op->result = 0;
			return true;
		}
		return false;
	}
	if (c->count) {
		copy(op->elem, slot(c, 0), c->elem);
		c->head = (c->head + 1) % c->cap;
		c->count--;
		/* Room now: the oldest waiting sender fills it. */
		n = cq_claim(&c->sendq_head, &c->sendq_tail);
		if (n) {
			copy(slot(c, c->count), n->op->elem, c->elem);
			c->count++;
			n->sel->result = 0;
			*wake = n;
		}
		op->result = 0;
		return true;
	}
	n = cq_claim(&c->sendq_head, &c->sendq_tail);
	if (n) {
		/* Senders wait on an empty channel only at capacity 0. */
		copy(op->elem, n->op->elem, c->elem);
		n->sel->result = 0;
		*wake = n;
		op->result = 0;
		return true;
	}
	if (c->closed) {
		op->result = -EPIPE;
		return true;
	}
	return false;
}

static void wake_sel(struct sel *s)
{
	wake(&s->base);
}

static uint32_t sel_rand(void)
{
	static __thread uint32_t x;

	if (!x)
		x = my_tid() * 2654435761u | 1;
	x ^= x << 13;
	x ^= x >> 17;
	x ^= x << 5;
	return x;
}

static bool op_ok(const struct umcg_chan_op *op)
{
	if (op->op != UMCG_CHAN_SEND && op->op != UMCG_CHAN_RECV)
		return false;
	if (!op->chan)
		return true;
	return chan_ok(op->chan) && (op->elem || !op->chan->elem);
}

/* Take @s's nodes that are still queued off their channels. */
static void sel_unqueue(struct cnode *nodes, struct umcg_chan_op *ops, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		struct umcg_chan *c = ops[i].chan;

		if (!c || !nodes[i].sel)
			continue;
		lock(&c->lock);
		if (nodes[i].q.queued) {
			if (ops[i].op == UMCG_CHAN_SEND)
				fifo_unlink(&c->sendq_head, &c->sendq_tail, &nodes[i].q);
			else
				fifo_unlink(&c->recvq_head, &c->recvq_tail, &nodes[i].q);
		}
		unlock(&c->lock);
	}
}

/* Lock the distinct channels of @ops in address order; return how many. */
static size_t lock_all(struct umcg_chan_op *ops, size_t n, struct umcg_chan **chans)
{
	size_t m = 0, i, j;

	for (i = 0; i < n; i++) {
		struct umcg_chan *c = ops[i].chan;

		if (!c)
			continue;
		for (j = 0; j < m && chans[j] < c; j++)
			;
		if (j < m && chans[j] == c)
			continue;
		memmove(&chans[j + 1], &chans[j], (m - j) * sizeof(*chans));
		chans[j] = c;
		m++;
	}
	for (i = 0; i < m; i++)
		lock(&chans[i]->lock);
	return m;
}

static void unlock_all(struct umcg_chan **chans, size_t m)
{
	while (m)
		unlock(&chans[--m]->lock);
}

/*
 * The select machine. @deadline: 0 polls (-EAGAIN if nothing is ready),
 * UMCG_CHAN_FOREVER waits for ever, else until then (-ETIMEDOUT).
 */
static int chan_select(struct umcg_chan_op *ops, size_t n, uint64_t deadline)
{
	struct umcg_chan *chans[SELECT_MAX];
	struct cnode nodes[SELECT_MAX], *wk;
	uint8_t order[SELECT_MAX];
	bool timed = deadline != UMCG_CHAN_FOREVER;
	struct sel s;
	uint32_t open;
	size_t i, j, m;

	if (!ops || n == 0 || n > SELECT_MAX)
		return -EINVAL;
	for (i = 0; i < n; i++)
		if (!op_ok(&ops[i]))
			return -EINVAL;
	/* A random order for the poll (Fisher-Yates). */
	order[0] = 0;
	for (i = 1; i < n; i++) {
		j = sel_rand() % (i + 1);
		order[i] = order[j];
		order[j] = (uint8_t)i;
	}
	if (n == 1) {
		/* A plain send or receive: one lock, no sorting. */
		m = 0;
		if (ops[0].chan) {
			chans[0] = ops[0].chan;
			lock(&chans[0]->lock);
			m = 1;
		}
	} else {
		m = lock_all(ops, n, chans);
	}
	for (i = 0; i < n; i++) {
		struct umcg_chan_op *op = &ops[order[i]];

		if (op->chan && chan_try(op->chan, op, &wk)) {
			unlock_all(chans, m);
			if (wk)
				wake_sel(wk->sel);
			return order[i];
		}
	}
	if (deadline == 0 || (timed && now_mono() >= deadline)) {
		unlock_all(chans, m);
		return deadline == 0 ? -EAGAIN : -ETIMEDOUT;
	}
	waiter_init(&s.base, timed);
	s.claimed = 0;
	s.result = 0;
	for (i = 0; i < n; i++) {
		struct umcg_chan *c = ops[i].chan;

		nodes[i].sel = c ? &s : NULL;
		nodes[i].op = &ops[i];
		nodes[i].idx = (uint32_t)i;
		nodes[i].q.queued = false;
		if (!c)
			continue;
		if (ops[i].op == UMCG_CHAN_SEND)
			fifo_push(&c->sendq_head, &c->sendq_tail, &nodes[i].q);
		else
			fifo_push(&c->recvq_head, &c->recvq_tail, &nodes[i].q);
	}
	unlock_all(chans, m);
	/* Wait for a claimant, or for the deadline. */
	if (!sleep_woken(&s.base, timed, deadline)) {
		open = 0;
		if (umcg__cas(&s.claimed, &open, SEL_TIMEOUT, umcg__acq_rel)) {
			sel_unqueue(nodes, ops, n);
			return -ETIMEDOUT;
		}
		/* A claimant is moving the data: wait for it. */
		futex_sleep(&s.base, NULL);
	}
	i = umcg__load(&s.claimed, umcg__acquire) - 1;
	ops[i].result = s.result;
	nodes[i].sel = NULL;
	sel_unqueue(nodes, ops, n);
	return (int)i;
}

UMCG_API int umcg_chan_select(struct umcg_chan_op *ops, size_t n, uint64_t deadline)
{
	return chan_select(ops, n, deadline);
}

/* One operation through the select machine. */
static int chan_one(struct umcg_chan *c, int what, void *elem, uint64_t deadline)
{
	struct umcg_chan_op op = { .chan = c, .op = what, .elem = elem };
	int ret;

	if (!chan_ok(c))
		return -EINVAL;
	ret = chan_select(&op, 1, deadline);
	return ret < 0 ? ret : op.result;
}

UMCG_API int umcg_chan_send(struct umcg_chan *c, const void *elem)
{
	return chan_one(c, UMCG_CHAN_SEND, (void *)elem, UMCG_CHAN_FOREVER);
}

UMCG_API int umcg_chan_recv(struct umcg_chan *c, void *elem)
{
	return chan_one(c, UMCG_CHAN_RECV, elem, UMCG_CHAN_FOREVER);
}

UMCG_API int umcg_chan_try_send(struct umcg_chan *c, const void *elem)
{
	return chan_one(c, UMCG_CHAN_SEND, (void *)elem, 0);
}

UMCG_API int umcg_chan_try_recv(struct umcg_chan *c, void *elem)
{
	return chan_one(c, UMCG_CHAN_RECV, elem, 0);
}

/* A timed operation whose deadline has passed still tries once; a deadline
 * of 0 is such a deadline, not a poll: -ETIMEDOUT, as for every timed call. */
static uint64_t timed_deadline(uint64_t deadline)
{
	if (deadline == 0)
		return 1;
	return deadline == UMCG_CHAN_FOREVER ? UMCG_CHAN_FOREVER - 1 : deadline;
}

UMCG_API int umcg_chan_timed_send(struct umcg_chan *c, const void *elem, uint64_t deadline)
{
	return chan_one(c, UMCG_CHAN_SEND, (void *)elem, timed_deadline(deadline));
}

UMCG_API int umcg_chan_timed_recv(struct umcg_chan *c, void *elem, uint64_t deadline)
{
	return chan_one(c, UMCG_CHAN_RECV, elem, timed_deadline(deadline));
}

UMCG_API int umcg_chan_close(struct umcg_chan *c)
{
	struct cnode *n, *list = NULL;

	if (!chan_ok(c))
		return -EINVAL;
	lock(&c->lock);
	if (c->closed) {
		unlock(&c->lock);
		return -EPIPE;
	}
	c->closed = 1;
	/* Claim every waiter; wake them once the lock is down. The nodes'
	 * q.prev links the list: each claimed node is ours alone. */
	while ((n = cq_claim(&c->recvq_head, &c->recvq_tail)) ||
	       (n = cq_claim(&c->sendq_head, &c->sendq_tail))) {
		n->sel->result = -EPIPE;
		n->q.prev = (struct qlink *)list;
		list = n;
	}
	unlock(&c->lock);
	while (list) {
		n = list;
		list = (struct cnode *)n->q.prev; /* before the wake-up: @n may go */
		wake_sel(n->sel);
	}
	return 0;
}

UMCG_API int umcg_chan_destroy(struct umcg_chan *c)
{
	if (!chan_ok(c))
		return -EINVAL;
	lock(&c->lock);
	if (c->sendq_head || c->recvq_head) {
		unlock(&c->lock);
		return -EBUSY;
	}
	umcg__store(&c->magic, 0, umcg__relaxed);
	unlock(&c->lock);
	free(c);
	return 0;
}

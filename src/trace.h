/* SPDX-License-Identifier: MIT */
/*
 * trace.h - USDT tracepoints of libumcg (provider "libumcg").
 *
 * Each probe is a single nop in the code plus an ELF note (.note.stapsdt)
 * that names it and says where its arguments live; a tracer (perf, bpftrace,
 * SystemTap) turns the nop into a breakpoint only while it traces. Untraced,
 * a probe costs that nop and keeps its arguments in registers: no branch,
 * no load, no call. The library uses no probe semaphores, so nothing is
 * ever computed only for a tracer; every argument below is a value the code
 * already has at hand.
 *
 * The probes (all arguments are integers; tids are kernel thread ids, a
 * server is its index in its runtime, -1 where there is none):
 *
 *   switch(server, tid, how)  a server's CPU goes to worker @tid: how 0,
 *                             the server picked it and it got the CPU; how
 *                             1, a worker of @server is about to hand its
 *                             CPU straight to @tid through next_tid (if
 *                             @tid cannot take it, the server gets it)
 *   block(tid)                worker @tid announced that it may sleep in
 *                             the kernel (umcg_block_begin(), the io.h
 *                             wrappers); emulated backend only: on the
 *                             kernel the kernel itself sees blocking
 *   wake(task, waker)         the emulation set the struct umcg_task at
 *                             address @task RUNNING and wakes its thread;
 *                             @waker is the caller's tid (-1: not a UMCG
 *                             task); emulated backend only
 *   preempt(server, tid)      a server's slice ended: it preempts @tid
 *   steal(server, tid)        idle @server took worker @tid from another
 *                             server's queue
 *   park(tid)                 worker @tid parks (umcg_park())
 *   unpark(tid, waker)        parked worker @tid is made runnable by
 *                             umcg_unpark() from worker @waker (-1: from
 *                             a thread that is not a worker)
 *   spawn(server, tid)        the new worker @tid starts, on @server
 *   exit(server, tid)         worker @tid finishes (returned, umcg_exit(),
 *                             pthread_exit() or cancelled)
 *
 * Built without <sys/sdt.h> (Debian: systemtap-sdt-dev), every probe is
 * compiled out and UMCG_HAVE_SDT is 0; configure says which.
 */
#ifndef UMCG_SRC_TRACE_H
#define UMCG_SRC_TRACE_H

#if defined(UMCG_HAVE_SDT) && UMCG_HAVE_SDT
#include <sys/sdt.h>

#define UMCG_TRACE1(name, a) STAP_PROBE1(libumcg, name, a)
#define UMCG_TRACE2(name, a, b) STAP_PROBE2(libumcg, name, a, b)
#define UMCG_TRACE3(name, a, b, c) STAP_PROBE3(libumcg, name, a, b, c)
#else
#define UMCG_TRACE1(name, a) ((void)(a))
#define UMCG_TRACE2(name, a, b) ((void)(a), (void)(b))
#define UMCG_TRACE3(name, a, b, c) ((void)(a), (void)(b), (void)(c))
#endif

#endif /* UMCG_SRC_TRACE_H */

/* SPDX-License-Identifier: MIT */
/*
 * tests/abi/fake-kernel-headers/linux/umcg.h - a stand-in for the uapi header
 * that a kernel built with the UMCG patches installs.
 *
 * Only test-abi-coexist puts this directory on its include path. It mimics
 * what "make headers_install" produces from include/uapi/linux/umcg.h: the
 * include guard loses its _UAPI prefix, the fields use the <linux/types.h>
 * types (__u32, __u64, which differ from uint64_t on LP64: unsigned long
 * long against unsigned long), and the umcg_ctl() flags are an enum rather
 * than macros, so that nothing in <umcg/abi.h> or <umcg/umcg.h> may test
 * them with #if. The values and layout are those of doc/umcg-abi.md §2;
 * if libumcg's static asserts accept this header, they accept the real one.
 */
#ifndef _LINUX_UMCG_H
#define _LINUX_UMCG_H

#include <linux/types.h>

#define UMCG_TASK_ALIGN 64

#define UMCG_TASK_NONE 0x0000U
#define UMCG_TASK_RUNNING 0x0001U
#define UMCG_TASK_RUNNABLE 0x0002U
#define UMCG_TASK_BLOCKED 0x0003U
#define UMCG_TASK_MASK 0x00ffU

#define UMCG_TF_PREEMPT 0x0100U
#define UMCG_TF_COND_WAIT 0x0200U
#define UMCG_TF_MASK 0xff00U

struct umcg_task {
	__u32 state;
	__u32 next_tid;
	__u32 server_tid;
	__u32 __hole[1];
	__u64 blocked_ts;
	__u64 runnable_ts;
	__u64 runnable_workers_ptr;
	__u64 __zero[3];
} __attribute__((packed, aligned(UMCG_TASK_ALIGN)));

enum umcg_ctl_flag {
	UMCG_CTL_REGISTER = 0x00001,
	UMCG_CTL_UNREGISTER = 0x00002,
	UMCG_CTL_WORKER = 0x10000,
};

#endif /* _LINUX_UMCG_H */

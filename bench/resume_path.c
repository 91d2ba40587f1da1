/*
 * bench/resume_path.c - how a preempted uthread should resume: through rt_sigreturn, or by hand.
 *
 * Owns: the measurement behind that choice (docs/preemption.md). Signals to self with an
 * SA_NODEFER handler that (a) returns through rt_sigreturn, or (b) leaves the handler with an
 * XRSTOR of the whole XCR0 state and a longjmp (a lower bound for restoring a frame by hand).
 * Usage: resume_path   (prints ns per round trip, three rounds)
 */
#define _GNU_SOURCE
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>
#include <sys/syscall.h>
#include <ucontext.h>
#include <x86intrin.h>
#include <time.h>
static jmp_buf jb; static int mode; static pid_t pid, tid;
static char xarea[8192] __attribute__((aligned(64)));
static void h(int s, siginfo_t *si, void *uc){ (void)s;(void)si;(void)uc;
  if (mode==1) { /* restore by hand: full xstate from an area, then jump back */
    __builtin_ia32_xrstor64(xarea, -1); _longjmp(jb,1); } }
static uint64_t ns(void){ struct timespec t; clock_gettime(CLOCK_MONOTONIC,&t); return t.tv_sec*1000000000ull+t.tv_nsec; }
int main(void){ struct sigaction sa; memset(&sa,0,sizeof sa); sa.sa_sigaction=h; sa.sa_flags=SA_SIGINFO|SA_NODEFER; sigaction(SIGURG,&sa,0);
  pid=getpid(); tid=gettid(); __builtin_ia32_xsave64(xarea, -1);
  const int N=200000;
  for(int rep=0;rep<3;rep++){
  mode=0; uint64_t t0=ns(); for(int i=0;i<N;i++) syscall(SYS_tgkill,pid,tid,SIGURG); uint64_t t1=ns();
  mode=1; uint64_t t2=ns(); for(volatile int i=0;i<N;i++){ if(!_setjmp(jb)) syscall(SYS_tgkill,pid,tid,SIGURG); } uint64_t t3=ns();
  uint64_t t4=ns(); for(int i=0;i<N;i++) syscall(SYS_getpid); uint64_t t5=ns();
  printf("signal to self, handler returns via rt_sigreturn: %.0f ns | handler escapes, XRSTOR(all)+longjmp: %.0f ns | bare syscall: %.0f ns\n",(double)(t1-t0)/N,(double)(t3-t2)/N,(double)(t5-t4)/N); }
}

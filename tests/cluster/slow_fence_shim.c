// LD_PRELOAD shim for cluster_slurm_test.py: the task whose rank is TROUPE_SLOW_FENCE_RANK
// learns TROUPE_SLOW_FENCE_MS late that its first PMIx fence completed. That fence is Open MPI's
// address exchange in MPI_Init (v4.1); until it returns, the task's PML has no receive handlers,
// and a message from a peer reaches the transport's empty handler slot: a call through a null
// pointer. MPI_Init's closing fence must hold every peer back until then; with Slurm's pmix
// plugin that takes SLURM_PMIX_FENCE=ring (its default tree fence let peers through at once).
// Only the public PMIx_Fence_nb is wrapped, so nothing depends on Open MPI's internals.
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pmix.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef pmix_status_t (*fence_fn)(const pmix_proc_t[], size_t, const pmix_info_t[], size_t,
                                  pmix_op_cbfunc_t, void*);

struct late {
  pmix_op_cbfunc_t cbfunc;
  void* cbdata;
  pmix_status_t status;
};

static void* report_late(void* arg) {
  struct late* l = arg;
  usleep(1000 * (useconds_t)atoi(getenv("TROUPE_SLOW_FENCE_MS")));
  l->cbfunc(l->status, l->cbdata);
  free(l);
  return NULL;
}

// PMIx's progress thread stays free: it must serve the lookups of the peers' addresses that the
// task's main thread makes while it polls MPI and waits for this report.
static void complete_late(pmix_status_t status, void* arg) {
  struct late* l = arg;
  l->status = status;
  pthread_t thread;
  if (pthread_create(&thread, NULL, report_late, l) != 0) {
    report_late(l);
    return;
  }
  pthread_detach(thread);
}

pmix_status_t PMIx_Fence_nb(const pmix_proc_t procs[], size_t nprocs, const pmix_info_t info[],
                            size_t ninfo, pmix_op_cbfunc_t cbfunc, void* cbdata) {
  static int fences = 0;
  fence_fn real = (fence_fn)dlsym(RTLD_NEXT, "PMIx_Fence_nb");
  const char* rank = getenv("SLURM_PROCID");
  const char* slow = getenv("TROUPE_SLOW_FENCE_RANK");
  if (fences++ == 0 && cbfunc != NULL && rank && slow && strcmp(rank, slow) == 0 &&
      getenv("TROUPE_SLOW_FENCE_MS") != NULL) {
    struct late* l = malloc(sizeof *l);
    l->cbfunc = cbfunc;
    l->cbdata = cbdata;
    return real(procs, nprocs, info, ninfo, complete_late, l);
  }
  return real(procs, nprocs, info, ninfo, cbfunc, cbdata);
}

package ipopt

/*
#include <malloc.h>

// gbd_malloc_keep tells glibc's allocator to keep freed memory below these sizes in the heap
// instead of returning it to the kernel: Ipopt and MUMPS allocate and free their whole
// workspace on every solve, and with glibc's defaults (a dynamic threshold from 128 KiB) each
// solve ended in madvise/munmap and began in page faults.
static int gbd_malloc_keep(int trim, int mmap) {
	return mallopt(M_TRIM_THRESHOLD, trim) && mallopt(M_MMAP_THRESHOLD, mmap);
}
*/
import "C"

// Heap-retention thresholds set at package initialisation (see gbd_malloc_keep). A process that
// solves NLPs keeps up to keepTrim bytes of freed C heap for the next solve; blocks below keepMmap
// come from the heap rather than from fresh mappings. Both are far above one solve's workspace
// for gbd's problems and far below a daemon's memory budget.
const (
	keepTrim = 32 << 20
	keepMmap = 16 << 20
)

// mallocTuned reports whether glibc accepted the thresholds (it refuses values above its own
// limits; the allocator then keeps its defaults, which is only slower).
var mallocTuned = setHeapRetention(keepTrim, keepMmap)

// setHeapRetention sets glibc's trim and mmap thresholds (BenchmarkHeapRetention compares).
func setHeapRetention(trim, mmap int) bool {
	return C.gbd_malloc_keep(C.int(trim), C.int(mmap)) == 1
}

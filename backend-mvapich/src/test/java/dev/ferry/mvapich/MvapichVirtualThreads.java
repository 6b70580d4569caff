package dev.ferry.mvapich;

import dev.ferry.testing.VirtualThreadsContract;

/** Blocking calls on virtual threads with two carriers, on backend mvapich. */
public class MvapichVirtualThreads extends VirtualThreadsContract {
}

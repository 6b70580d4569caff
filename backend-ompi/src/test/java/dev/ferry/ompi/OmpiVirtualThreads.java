package dev.ferry.ompi;

import dev.ferry.testing.VirtualThreadsContract;

/** Blocking calls on virtual threads with two carriers, on backend ompi. */
public class OmpiVirtualThreads extends VirtualThreadsContract {
}

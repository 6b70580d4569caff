package dev.ferry.staged;

import dev.ferry.testing.VirtualThreadsContract;

/** Blocking calls on virtual threads with two carriers, on backend staged. */
public class StagedVirtualThreads extends VirtualThreadsContract {
}

package dev.ferry.ompi;

import dev.ferry.testing.ProbeAndRequestsContract;

/** Probes, matched messages, waitAny/testAny/testAll and cancel on backend ompi (either path). */
public class OmpiProbeAndRequests extends ProbeAndRequestsContract {
}

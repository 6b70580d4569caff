// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry.nccl;

import dev.ferry.Communicator;
import dev.ferry.DataType;
import dev.ferry.HostBuffer;
import dev.ferry.cuda.Cuda;
import dev.ferry.spi.Transport;
import java.lang.foreign.MemorySegment;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * Whether every rank of the job has a GPU of its own, which NCCL requires: it refuses a
 * communicator in which two ranks use one GPU ("Duplicate GPU detected", ncclInvalidUsage),
 * MPS or not. Decided once, when the backend opens, by one allGather over the inner (MPI)
 * communicator of each rank's host name and the PCI bus id of its GPU (Ferry's device for the
 * rank, {@link Cuda#defaultDevice()}), as {@code backend-mvapich}'s SharedGpuCheck does; every
 * rank gets the same list, so every rank decides the same.
 */
final class GpuPlacement {
    /** Bytes per rank in the allGather: "host|busId", UTF-8, zero padded. */
    static final int RECORD = 256;
    /** The bus id of a rank without a usable GPU. */
    static final String NO_GPU = "-";

    private GpuPlacement() {
    }

    /** One rank's place: its host and its GPU's PCI bus id ({@link #NO_GPU} when it has none). */
    record Place(String host, String busId) {
    }

    /** This rank's place. */
    static Place mine() {
        String bus = NO_GPU;
        if (Cuda.isAvailable()) {
            try {
                String b = Cuda.defaultDevice().pciBusId();
                bus = b == null || b.isBlank() || b.equals("?") ? "ordinal " + Cuda.defaultDevice().ordinal() : b;
            } catch (RuntimeException e) {
                bus = NO_GPU;
            }
        }
        return new Place(hostName(), bus);
    }

    /** Collective over {@code world}: every rank's place, in rank order. */
    static List<Place> exchange(Transport world, Place mine) {
        int n = world.size();
        try (HostBuffer in = HostBuffer.allocate(RECORD); HostBuffer all = HostBuffer.allocate((long) RECORD * n)) {
            byte[] b = (mine.host() + "|" + mine.busId()).getBytes(StandardCharsets.UTF_8);
            MemorySegment.copy(b, 0, in.segment(), java.lang.foreign.ValueLayout.JAVA_BYTE, 0, Math.min(b.length, RECORD - 1));
            world.allGather(in, all, RECORD, DataType.BYTE);
            List<Place> out = new ArrayList<>(n);
            for (int r = 0; r < n; r++) {
                out.add(parse(all.segment().asSlice((long) r * RECORD, RECORD)));
            }
            return out;
        }
    }

    static Place parse(MemorySegment record) {
        String s = record.getString(0, StandardCharsets.UTF_8);
        int bar = s.lastIndexOf('|');
        return bar < 0 ? new Place(s, NO_GPU) : new Place(s.substring(0, bar), s.substring(bar + 1));
    }

    /**
     * The decision: null when every rank has a GPU and no two ranks of one host have the same
     * one; else why NCCL cannot be used (naming the ranks, host and GPU), identical on every rank.
     */
    static String refusal(List<Place> places) {
        Map<String, Integer> seen = new HashMap<>();
        for (int r = 0; r < places.size(); r++) {
            Place p = places.get(r);
            if (p.busId().equals(NO_GPU)) {
                return "rank " + r + " (on " + p.host() + ") has no usable GPU, and NCCL needs one GPU per rank";
            }
            Integer other = seen.putIfAbsent(p.host() + "|" + p.busId(), r);
            if (other != null) {
                return "ranks " + other + " and " + r + " share the GPU " + p.busId() + " on " + p.host()
                        + ": NCCL refuses two ranks on one GPU (with or without MPS); run one rank per GPU (ferry picks the GPU from the"
                        + " node-local rank, or -Dferry.device)";
            }
        }
        return null;
    }

    static String hostName() {
        try {
            return Files.readString(Path.of("/proc/sys/kernel/hostname")).trim();
        } catch (java.io.IOException | RuntimeException e) {
            try {
                return java.net.InetAddress.getLocalHost().getHostName();
            } catch (java.io.IOException e2) {
                return "unknown-host";
            }
        }
    }
}

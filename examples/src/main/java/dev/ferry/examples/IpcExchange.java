// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry.examples;

import dev.ferry.Communicator;
import dev.ferry.DataType;
import dev.ferry.DeviceBuffer;
import dev.ferry.HostBuffer;
import dev.ferry.cuda.Cuda;
import dev.ferry.cuda.CudaDevice;
import dev.ferry.cuda.CudaIpc;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.net.InetAddress;
import java.net.UnknownHostException;
import java.nio.charset.StandardCharsets;
import java.util.Locale;

/**
 * GPU memory shared between two processes of one node by CUDA IPC handle: the owner (even rank
 * {@code 2k}) allocates device memory, fills it, and sends its 64-byte IPC handle over the
 * communicator (a small host message); the peer (rank {@code 2k+1}) opens the handle, which maps
 * the owner's memory into its own address space, runs a kernel on it that adds 1 to every
 * element, closes the mapping and says so; the owner then reads its memory and checks every
 * element. No data crosses the communicator, only the handle.
 *
 * <p>CUDA's rules that shape it: a process cannot open its own handle (so owner and peer are
 * different ranks); both must be on the same node; the handle covers the whole allocation (the
 * buffer's offset travels with it); when the two ranks use different GPUs, the peer's GPU maps the
 * owner's over NVLink or PCIe if the two can access each other (peer access, enabled by the open),
 * otherwise the peer runs the kernel on the owner's GPU; two ranks on one GPU share it directly.
 *
 * <p>Skipped (not failed) without a GPU, with one rank, or when the partner is on another node.
 *
 * <p>Run: {@code mpirun -np 2 java --enable-native-access=ALL-UNNAMED -cp ... dev.ferry.examples.IpcExchange [--ipc-ints 16M]}
 */
public final class IpcExchange {
    /** Name in result lines. */
    public static final String NAME = "ipc-exchange";

    private static final int TAG_HANDLE = 301;
    private static final int TAG_DONE = 302;
    private static final int HOST_BYTES = 256;
    private static final int PCI_BYTES = 32;
    private static final int NOTE_BYTES = 252;
    /** Handle, then base offset, size, element count (longs), device ordinal (int), then the owner GPU's PCI bus id. */
    private static final int HANDLE_MESSAGE = CudaIpc.HANDLE_BYTES + 3 * Long.BYTES + Integer.BYTES + PCI_BYTES;

    private IpcExchange() {
    }

    /** Runs this example alone: {@code mpirun -np N java ... dev.ferry.examples.IpcExchange [options]}; exit 1 when its check fails. */
    public static void main(String[] args) {
        Examples.main(args, IpcExchange::run);
    }

    /** Runs the example on {@code comm} (collective); the verdict is the same on every rank. */
    public static Outcome run(Communicator comm, Options options) {
        int rank = comm.rank();
        int size = comm.size();
        String why = null;
        if (size < 2) {
            why = "needs 2 ranks: CUDA does not let a process open its own IPC handle";
        } else if (options.mode().equals("host")) {
            why = "host version requested (--mode host)";
        }
        // every rank must agree before any rank goes on: GPU present everywhere?
        boolean gpuHere = Cuda.isAvailable();
        boolean gpuEverywhere = allTrue(comm, gpuHere);
        if (why == null && !gpuEverywhere) {
            why = gpuHere ? "needs a CUDA device on every rank; some rank has none"
                    : "needs a CUDA device on every rank; here: " + Cuda.unavailabilityCause().getMessage().split(";")[0];
        }
        String[] hosts = hostnames(comm);
        if (why != null) {
            return Outcome.skip(NAME, why).agree(comm);
        }
        int partner = (rank % 2 == 0) ? rank + 1 : rank - 1;
        boolean paired = partner < size && hosts[partner].equals(hosts[rank]);
        Outcome mine;
        if (!paired) {
            // an unpaired rank does not spoil the others' result; rank 0 unpaired means nothing to show
            String alone = partner >= size ? "rank " + rank + " has no partner (odd number of ranks)"
                    : "rank " + rank + " and its partner " + partner + " are on different nodes (" + hosts[rank] + ", " + hosts[partner] + ")";
            mine = rank == 0 ? Outcome.skip(NAME, alone) : Outcome.ok(NAME, alone);
        } else if (rank % 2 == 0) {
            mine = owner(comm, partner, options.ipcInts());
        } else {
            mine = peer(comm, partner);
        }
        // the summary of rank 0 (pair 0-1) speaks for the job; a failure anywhere fails it
        if (rank == 0 && mine.status() == Outcome.Status.OK && size > 2) {
            mine = Outcome.ok(NAME, mine.summary() + " (pair 0-1 shown; " + (size / 2) + " pairs)");
        }
        return mine.agree(comm);
    }

    /** Owner: allocate, fill, export, wait for the peer, check. */
    private static Outcome owner(Communicator comm, int peer, long n) {
        CudaDevice gpu = Cuda.defaultDevice();
        long bytes = n * Integer.BYTES;
        int[] pattern = new int[Math.toIntExact(n)];
        for (int i = 0; i < pattern.length; i++) {
            pattern[i] = i * 7 + comm.rank();
        }
        try (DeviceBuffer shared = Cuda.allocate(bytes);
             HostBuffer host = Cuda.allocatePinned(bytes);
             HostBuffer msg = HostBuffer.allocate(HANDLE_MESSAGE);
             HostBuffer done = HostBuffer.allocate(HOST_BYTES)) {
            MemorySegment.copy(pattern, 0, host.segment(), ValueLayout.JAVA_INT, 0, pattern.length);
            Cuda.copy(shared, host, bytes);
            CudaIpc.Export export = CudaIpc.export(shared);
            MemorySegment m = msg.segment();
            MemorySegment.copy(export.handle(), 0, m, ValueLayout.JAVA_BYTE, 0, CudaIpc.HANDLE_BYTES);
            long at = CudaIpc.HANDLE_BYTES;
            m.set(ValueLayout.JAVA_LONG_UNALIGNED, at, export.offset());
            m.set(ValueLayout.JAVA_LONG_UNALIGNED, at + 8, export.size());
            m.set(ValueLayout.JAVA_LONG_UNALIGNED, at + 16, n);
            m.set(ValueLayout.JAVA_INT_UNALIGNED, at + 24, export.device());
            putString(m, at + 28, PCI_BYTES, gpu.pciBusId());
            comm.send(msg, HANDLE_MESSAGE, DataType.BYTE, peer, TAG_HANDLE);

            // the peer works on our memory now; its answer says when it is done and how it went
            comm.recv(done, HOST_BYTES, DataType.BYTE, peer, TAG_DONE);
            int status = done.segment().get(ValueLayout.JAVA_INT, 0);
            String note = getString(done.segment(), 4, NOTE_BYTES);
            if (status != 0) {
                return Outcome.fail(NAME, "rank " + peer + " could not work on rank " + comm.rank() + "'s memory: " + note);
            }
            Cuda.copy(host, shared, bytes);
            for (int i = 0; i < pattern.length; i++) {
                int got = host.segment().getAtIndex(ValueLayout.JAVA_INT, i);
                if (got != pattern[i] + 1) {
                    return Outcome.fail(NAME, "element " + i + " of rank " + comm.rank() + "'s memory is " + got + ", expected " + (pattern[i] + 1)
                            + " after rank " + peer + " added 1 (" + note + ")");
                }
            }
            return Outcome.ok(NAME, String.format(Locale.ROOT, "rank %d opened rank %d's IPC handle (%s ints on GPU %d) and added 1 %s; "
                    + "rank %d checked every element", peer, comm.rank(), Fmt.count(n), gpu.ordinal(), note, comm.rank()));
        }
    }

    /** Peer: open the owner's handle, add 1 on a GPU, close, report. */
    private static Outcome peer(Communicator comm, int owner) {
        CudaDevice mine = Cuda.defaultDevice();
        try (HostBuffer msg = HostBuffer.allocate(HANDLE_MESSAGE); HostBuffer done = HostBuffer.allocate(HOST_BYTES)) {
            comm.recv(msg, HANDLE_MESSAGE, DataType.BYTE, owner, TAG_HANDLE);
            MemorySegment m = msg.segment();
            byte[] handle = m.asSlice(0, CudaIpc.HANDLE_BYTES).toArray(ValueLayout.JAVA_BYTE);
            long at = CudaIpc.HANDLE_BYTES;
            long offset = m.get(ValueLayout.JAVA_LONG_UNALIGNED, at);
            long n = m.get(ValueLayout.JAVA_LONG_UNALIGNED, at + 16);
            int ownerOrdinal = m.get(ValueLayout.JAVA_INT_UNALIGNED, at + 24);
            String ownerPci = getString(m, at + 28, PCI_BYTES);

            int status = 0;
            String note;
            try {
                // the owner's GPU as this process numbers it (CUDA_VISIBLE_DEVICES may differ): found by PCI bus id
                int ownerHere = -1;
                for (int d = 0; d < Cuda.deviceCount(); d++) {
                    if (Cuda.device(d).pciBusId().equalsIgnoreCase(ownerPci)) {
                        ownerHere = d;
                    }
                }
                int use;
                if (ownerHere == mine.ordinal()) {
                    use = mine.ordinal();
                    note = "on the same GPU " + use + " (two processes, one device)";
                } else if (ownerHere < 0 || Cuda.canAccessPeer(mine.ordinal(), ownerHere)) {
                    use = mine.ordinal();
                    note = "from GPU " + use + " through peer access to GPU " + (ownerHere < 0 ? ownerOrdinal + " (owner's numbering)" : ownerHere);
                } else {
                    use = ownerHere;
                    note = "on the owner's GPU " + use + " (GPU " + mine.ordinal() + " has no peer access to it)";
                }
                long base = CudaIpc.open(handle, use);
                try {
                    DeviceBuffer view = DeviceBuffer.wrap(use, base + offset, n * Integer.BYTES);
                    Kernels.addInts(view, n, 1);
                } finally {
                    CudaIpc.close(base, use);
                }
            } catch (RuntimeException e) {
                status = 1;
                note = e.toString();
            }
            done.segment().set(ValueLayout.JAVA_INT, 0, status);
            putString(done.segment(), 4, NOTE_BYTES, note);
            comm.send(done, HOST_BYTES, DataType.BYTE, owner, TAG_DONE);
            return status == 0 ? Outcome.ok(NAME, "rank " + comm.rank() + " added 1 " + note) : Outcome.fail(NAME, note);
        }
    }

    private static boolean allTrue(Communicator comm, boolean mine) {
        try (HostBuffer in = HostBuffer.allocate(4); HostBuffer out = HostBuffer.allocate(4)) {
            in.segment().set(ValueLayout.JAVA_INT, 0, mine ? 1 : 0);
            comm.allReduce(in, out, 1, DataType.INT, dev.ferry.ReduceOp.MIN);
            return out.segment().get(ValueLayout.JAVA_INT, 0) == 1;
        }
    }

    /** Every rank's host name (collective). */
    static String[] hostnames(Communicator comm) {
        int width = 256;
        String me;
        try {
            me = InetAddress.getLocalHost().getHostName();
        } catch (UnknownHostException e) {
            me = System.getenv().getOrDefault("HOSTNAME", "unknown");
        }
        try (HostBuffer mine = HostBuffer.allocate(width); HostBuffer all = HostBuffer.allocate((long) width * comm.size())) {
            putString(mine.segment(), 0, width, me);
            comm.allGather(mine, all, width, DataType.BYTE);
            String[] names = new String[comm.size()];
            for (int r = 0; r < names.length; r++) {
                names[r] = getString(all.segment(), (long) r * width, width);
            }
            return names;
        }
    }

    private static void putString(MemorySegment s, long at, int max, String text) {
        byte[] b = text.getBytes(StandardCharsets.UTF_8);
        int len = Math.min(b.length, max - 1);
        s.asSlice(at, max).fill((byte) 0);
        MemorySegment.copy(b, 0, s, ValueLayout.JAVA_BYTE, at, len);
    }

    private static String getString(MemorySegment s, long at, int max) {
        byte[] b = s.asSlice(at, max).toArray(ValueLayout.JAVA_BYTE);
        int len = 0;
        while (len < b.length && b[len] != 0) {
            len++;
        }
        return new String(b, 0, len, StandardCharsets.UTF_8);
    }
}

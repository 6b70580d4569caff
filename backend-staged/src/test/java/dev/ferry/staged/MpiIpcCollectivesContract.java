package dev.ferry.staged;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import dev.ferry.Buffer;
import dev.ferry.DataType;
import dev.ferry.Ferry;
import dev.ferry.FerrySettings;
import dev.ferry.HostBuffer;
import dev.ferry.ReduceOp;
import dev.ferry.SelectionReport;
import dev.ferry.Settings;
import dev.ferry.UnsupportedBufferException;
import dev.ferry.cuda.Cuda;
import dev.ferry.spi.Capability;
import dev.ferry.spi.CheckedCommunicator;
import dev.ferry.testing.CommunicatorContract;
import dev.ferry.testing.Data;
import dev.ferry.testing.Mem;
import dev.ferry.testing.Required;
import dev.ferry.testing.TestWorld;
import org.junit.jupiter.api.Test;

/**
 * The communicator contract under a backend that hands device buffers to a CUDA-aware MPI
 * ({@code -Dferry.backend=ompi} or {@code mvapich}) with this module on the class path, where
 * {@code ferry.deviceCollectives} gives the collectives on device buffers of one node's ranks to
 * the staged backend's CUDA IPC path ({@link MpiWithIpcCollectives}); plus the tests below, which
 * check that the setting is followed. Runs on a GPU machine ({@code scripts/device-run.sh ipc-under-mpi});
 * without a CUDA-aware MPI its tests skip with the reason.
 */
public class MpiIpcCollectivesContract extends CommunicatorContract {

    /** Skips unless the job's backend hands device buffers straight to a CUDA-aware MPI. */
    private void assumeCudaAwareMpi() {
        Required.assume("cuda", Cuda.isAvailable(), () -> "needs CUDA: " + Cuda.unavailabilityCause().getMessage());
        SelectionReport r = Ferry.lastReport();
        boolean aware = r != null && r.chosen() != null && r.probe(r.chosen()).has(Capability.CUDA_AWARE_MPI)
                && (r.chosen().equals("ompi") || r.chosen().equals("mvapich"));
        Required.assume("cuda-aware-mpi", aware, () -> "the backend here (" + comm.backend() + ") does not hand device buffers to a CUDA-aware MPI");
    }

    private String mode() {
        return Settings.process().get(FerrySettings.DEVICE_COLLECTIVES);
    }

    private long ipcCalls() {
        StagedRuntime rt = StagedRuntime.currentOrNull();
        return rt == null ? 0 : rt.stats.ipcCollectives.sum();
    }

    private long gpuReductions() {
        StagedRuntime rt = StagedRuntime.currentOrNull();
        return rt == null ? 0 : rt.stats.gpuReductions.sum();
    }

    @Test
    void mpi_deviceCollectivesFollowTheSetting() {
        assumeCudaAwareMpi();
        var transport = ((CheckedCommunicator) comm).transport();
        boolean decorated = transport instanceof MpiWithIpcCollectives;
        assertEquals(!mode().equals("mpi"), decorated, "ferry.deviceCollectives=" + mode() + ": the MPI's communicator is "
                + (decorated ? "" : "not ") + "given the IPC collectives");
        assertEquals(TestWorld.world().backend(), comm.backend(), "the communicator still names the MPI backend");
        boolean ipc = decorated && ((MpiWithIpcCollectives) transport).ipcCollectives().applicable();
        assertEquals(ipc, StagedDiagnostics.ipcCollectivesUnderMpi(comm));
        if (decorated) {
            {
                Peers p = ((MpiWithIpcCollectives) transport).peers();
                boolean expect = StagedRuntime.currentOrNull().ipcEnabled() && p.oneNodeWithIpc();
                assertEquals(TestWorld.allAgree(comm, expect), ipc, "the IPC path applies exactly when every rank is on this node with IPC on");
            }
        }
        long calls = ipcCalls(), folds = gpuReductions();
        for (int count : StagedContract.SHORT_ONE_SLICED) {
            StagedContract.allReduceRankSums(comm, alloc(Mem.DEVICE, 8L * count), alloc(Mem.DEVICE, 8L * count), count);
        }
        int expectedFolds = StagedContract.SHORT_ONE_SLICED.length, expectedCalls = expectedFolds;
        // broadcast and allGather of device buffers
        int n = 1000;
        Buffer b = alloc(Mem.DEVICE, 4L * n), g = alloc(Mem.DEVICE, 4L * n * size), mine = alloc(Mem.DEVICE, 4L * n);
        try (HostBuffer h = HostBuffer.allocate(4L * n * size)) {
            for (int i = 0; i < n; i++) Data.put(h.segment(), DataType.INT, i, rank == 0 ? 7 * i : -1);
            Cuda.copy(b, h, 4L * n);
            comm.broadcast(b, n, DataType.INT, 0);
            Cuda.copy(h, b, 4L * n);
            for (int i = 0; i < n; i++) assertEquals(7 * i, (int) Data.get(h.segment(), DataType.INT, i), "broadcast element " + i);
            for (int i = 0; i < n; i++) Data.put(h.segment(), DataType.INT, i, rank * n + i);
            Cuda.copy(mine, h, 4L * n);
            comm.allGather(mine, g, n, DataType.INT);
            Cuda.copy(h, g, 4L * n * size);
            for (int i = 0; i < n * size; i += 37) assertEquals(i, (int) Data.get(h.segment(), DataType.INT, i), "allGather element " + i);
        }
        expectedCalls += 2;
        // host buffers never take the IPC path
        try (HostBuffer hin = HostBuffer.allocate(8); HostBuffer hout = HostBuffer.allocate(8)) {
            hin.segment().set(java.lang.foreign.ValueLayout.JAVA_LONG, 0, rank + 1);
            comm.allReduce(hin, hout, 1, DataType.LONG, ReduceOp.SUM);
            assertEquals((long) size * (size + 1) / 2, hout.segment().get(java.lang.foreign.ValueLayout.JAVA_LONG, 0));
        }
        if (ipc) {
            assertEquals(expectedCalls, ipcCalls() - calls, "every device collective went over CUDA IPC, none of the host one");
            assertEquals(expectedFolds, gpuReductions() - folds, "every allReduce was folded on the GPU by Ferry's kernels");
            if (mode().equals("ipc")) {
                // forced: a device collective that cannot take the path fails on every rank alike (a misaligned INT buffer)
                Buffer in = alloc(Mem.DEVICE, 64), out = alloc(Mem.DEVICE, 64);
                assertThrows(UnsupportedBufferException.class, () -> comm.allReduce(in.slice(1, 8), out, 2, DataType.INT, ReduceOp.SUM));
                assertUsable();
            }
        } else {
            assertEquals(0, ipcCalls() - calls, "no collective went over Ferry's IPC path (" + mode() + ")");
        }
    }
}

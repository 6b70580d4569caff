// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry.cuda;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import dev.ferry.DataType;
import dev.ferry.DeviceBuffer;
import dev.ferry.HostBuffer;
import dev.ferry.InvalidArgumentException;
import dev.ferry.InvalidCountException;
import dev.ferry.InvalidReduceOpException;
import dev.ferry.ReduceOp;
import dev.ferry.spi.HostReduction;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.SplittableRandom;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Assertions;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;

/**
 * {@link DeviceReduction} against {@link HostReduction}: every data type and operator MPI defines,
 * on random data with the special values (NaN, infinities, -0, subnormals, ties of MINLOC/MAXLOC),
 * byte for byte. A NaN result equals any NaN (arithmetic on NaN gives a NaN whose bits neither Java
 * nor IEEE 754 fix). The tests that need a GPU skip with the reason without one, and fail instead
 * when {@code FERRY_TEST_REQUIRE} (or {@code ferry.test.require}) names {@code cuda}.
 */
class DeviceReductionTest {
    private static final int[] COUNTS = {1, 7, 33, 1000, 262_147};

    // ---- without a GPU -------------------------------------------------------------------------

    @Test
    void theModulesHoldExactlyTheKernelsOfTheDefinedPairings() {
        Pattern entry = Pattern.compile("^\\.visible \\.entry (\\w+)\\(", Pattern.MULTILINE);
        for (DataType t : DataType.values()) {
            String ptx = new String(DeviceReduction.ptx(t), StandardCharsets.US_ASCII);
            TreeSet<String> found = new TreeSet<>();
            Matcher m = entry.matcher(ptx);
            while (m.find()) found.add(m.group(1));
            TreeSet<String> expected = new TreeSet<>();
            for (ReduceOp op : ReduceOp.values()) {
                if (!op.appliesTo(t)) continue;
                for (DeviceReduction.Kernel k : DeviceReduction.Kernel.values()) {
                    if (k.typed() || t == DataType.BYTE) expected.add(DeviceReduction.entry(k, t, op)); // kernels of bytes: in the byte module alone
                }
            }
            assertEquals(expected, found, "kernels in " + DeviceReduction.resource(t));
            assertTrue(ptx.contains(".target sm_80"), DeviceReduction.resource(t) + " is PTX for compute_80 (JIT-compiled for newer GPUs)");
        }
    }

    @Test
    void undefinedPairingsAreRejectedBeforeAnyDriverCall() {
        int rejected = 0;
        for (DataType t : DataType.values()) {
            for (ReduceOp op : ReduceOp.values()) {
                if (op.appliesTo(t)) continue;
                InvalidReduceOpException e = assertThrows(InvalidReduceOpException.class,
                        () -> DeviceReduction.apply(t, op, 4096, 8192, 10, null), t + " " + op);
                assertTrue(e.getMessage().contains(op.name()) && e.getMessage().contains(t.name()), e.getMessage());
                rejected++;
            }
        }
        assertEquals(13 * 11 - 62, rejected, "pairings MPI does not define");
    }

    @Test
    void misalignedAddressesAndBadCountsAreRejected() {
        assertThrows(InvalidArgumentException.class, () -> DeviceReduction.apply(DataType.INT, ReduceOp.SUM, 4098, 8192, 10, null));
        assertThrows(InvalidArgumentException.class, () -> DeviceReduction.apply(DataType.LONG_INT, ReduceOp.MINLOC, 4096, 8196, 10, null));
        assertThrows(InvalidArgumentException.class, () -> DeviceReduction.apply(DataType.DOUBLE, ReduceOp.MAX, 0, 8192, 10, null));
        assertThrows(InvalidCountException.class, () -> DeviceReduction.apply(DataType.INT, ReduceOp.SUM, 4096, 8192, -1, null));
        assertThrows(InvalidArgumentException.class, () -> DeviceReduction.reduce(DataType.INT, ReduceOp.SUM, 4096, new long[0], 1, null));
        DeviceReduction.apply(DataType.SHORT_INT, ReduceOp.MAXLOC, 4100, 8196, 0, null); // nothing to do: no launch
        assertEquals(4, DeviceReduction.alignment(DataType.SHORT_INT));
        assertEquals(8, DeviceReduction.alignment(DataType.DOUBLE_INT));
        assertEquals(2, DeviceReduction.alignment(DataType.BFLOAT16));
    }

    /**
     * The kernel source built for the host with the system C++ compiler (src/test/cpp): every pairing,
     * on the vector and the element path, with 2 and 11 sources (two launches), against HostReduction. Checks the
     * kernels' logic on machines without a GPU; skipped (with the reason) where there is no compiler
     * or no source tree.
     */
    @Test
    void theKernelSourceBuiltForTheHostGivesTheHostResults() throws Exception {
        java.nio.file.Path cu = java.nio.file.Path.of("src/main/cuda/ferry_reduce.cu"), harness = java.nio.file.Path.of("src/test/cpp/ferry_reduce_host.cpp");
        Assumptions.assumeTrue(java.nio.file.Files.exists(cu) && java.nio.file.Files.exists(harness), "needs the module's source tree (run from cuda/)");
        String cxx = null;
        for (String c : new String[] {"g++", "c++", "clang++"}) {
            for (String dir : System.getenv().getOrDefault("PATH", "").split(":")) {
                if (cxx == null && java.nio.file.Files.isExecutable(java.nio.file.Path.of(dir, c))) cxx = java.nio.file.Path.of(dir, c).toString();
            }
        }
        Assumptions.assumeTrue(cxx != null, "no C++ compiler on PATH (g++, c++, clang++)");
        java.nio.file.Path dir = java.nio.file.Files.createDirectories(java.nio.file.Path.of("target/ferry-reduce-host"));
        java.nio.file.Path exe = dir.resolve("ferry_reduce_host");
        Process build = new ProcessBuilder(cxx, "-std=c++17", "-O1", "-rdynamic", "-I", cu.getParent().toString(), "-o", exe.toString(), harness.toString(), "-ldl")
                .redirectErrorStream(true).start();
        String log = new String(build.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        Assumptions.assumeTrue(build.waitFor() == 0 || !log.contains("_Float16"), () -> "this C++ compiler has no _Float16: " + log);
        assertEquals(0, build.waitFor(), () -> "building the host harness failed:\n" + log);
        int runs = 0;
        for (DataType t : DataType.values()) {
            for (ReduceOp op : ReduceOp.values()) {
                if (!op.appliesTo(t)) continue;
                for (int count : new int[] {1, 7, 4099}) {
                    for (int sources : new int[] {2, 11}) {
                        for (int vector = 0; vector <= 1; vector++) {
                            SplittableRandom rnd = new SplittableRandom(977L * t.ordinal() + 31L * op.ordinal() + count + 7L * sources);
                            List<String> cmd = new ArrayList<>(List.of(exe.toString(), DeviceReduction.entry(t, op), Integer.toString(t.size()),
                                    Integer.toString(count), Integer.toString(vector), Integer.toString(sources)));
                            MemorySegment expected = null;
                            for (int s = 0; s < sources; s++) {
                                MemorySegment in = MemorySegment.ofArray(new byte[t.size() * count]);
                                fill(in, t, ReduceOp.SUM, count, rnd);
                                java.nio.file.Path f = dir.resolve("in" + s);
                                java.nio.file.Files.write(f, in.toArray(ValueLayout.JAVA_BYTE));
                                cmd.add(f.toString());
                                if (expected == null) expected = MemorySegment.ofArray(in.toArray(ValueLayout.JAVA_BYTE));
                                else HostReduction.apply(t, op, expected, in, count);
                            }
                            java.nio.file.Path out = dir.resolve("out");
                            cmd.add(out.toString());
                            Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
                            String said = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
                            assertEquals(0, p.waitFor(), () -> String.join(" ", cmd) + ": " + said);
                            compare(t, op, expected, MemorySegment.ofArray(java.nio.file.Files.readAllBytes(out)), count,
                                    "host build, " + sources + " sources, " + count + " elements, vector " + vector);
                            runs++;
                        }
                    }
                }
            }
        }
        assertEquals(62 * 3 * 2 * 2, runs);
    }

    // ---- on the GPU ----------------------------------------------------------------------------

    private static void assumeCuda() {
        String req = System.getProperty("ferry.test.require", System.getenv().getOrDefault("FERRY_TEST_REQUIRE", ""));
        boolean required = Arrays.stream(req.split(",")).anyMatch(s -> s.trim().equalsIgnoreCase("cuda"));
        if (!Cuda.isAvailable() && required) {
            Assertions.fail("cuda is required here (FERRY_TEST_REQUIRE=" + req + ") but unavailable: " + Cuda.unavailabilityCause().getMessage());
        }
        Assumptions.assumeTrue(Cuda.isAvailable(), () -> "needs a GPU: " + Cuda.unavailabilityCause().getMessage());
    }

    @Test
    void everyTypeAndOperatorMatchesTheHostTwoOperandsInPlace() {
        assumeCuda();
        for (DataType t : DataType.values()) {
            for (ReduceOp op : ReduceOp.values()) {
                if (!op.appliesTo(t)) continue;
                for (int count : COUNTS) {
                    check(t, op, count, 2, 0, true);
                }
            }
        }
    }

    @Test
    void everyTypeAndOperatorMatchesTheHostManySourcesOutOfPlace() {
        assumeCuda();
        for (DataType t : DataType.values()) {
            for (ReduceOp op : ReduceOp.values()) {
                if (!op.appliesTo(t)) continue;
                check(t, op, 1001, 3, 0, false);
                check(t, op, 4099, 11, 0, false); // two launches: 8 sources, then the result and 3 more
            }
        }
    }

    @Test
    void addressesOffTheVectorAlignmentTakeTheElementPath() {
        assumeCuda();
        for (DataType t : DataType.values()) {
            for (ReduceOp op : ReduceOp.values()) {
                if (!op.appliesTo(t)) continue;
                check(t, op, 5003, 4, DeviceReduction.alignment(t), false); // every buffer one alignment unit off 16 bytes
            }
        }
    }

    @Test
    void theBufferFormChecksBounds() {
        assumeCuda();
        try (DeviceBuffer a = Cuda.allocate(64); DeviceBuffer b = Cuda.allocate(32); CudaStream s = Cuda.newStream()) {
            assertThrows(InvalidCountException.class, () -> DeviceReduction.apply(DataType.INT, ReduceOp.SUM, a, b, 9, s));
            assertThrows(InvalidReduceOpException.class, () -> DeviceReduction.apply(DataType.FLOAT, ReduceOp.BXOR, a, b, 1, s));
            Cuda.fill(a, (byte) 1);
            Cuda.fill(b, (byte) 2);
            DeviceReduction.apply(DataType.BYTE, ReduceOp.SUM, a, b, 32, s);
            s.synchronize();
            try (HostBuffer h = HostBuffer.allocate(64)) {
                Cuda.copy(h, a, 64);
                for (int i = 0; i < 64; i++) assertEquals(i < 32 ? 3 : 1, h.segment().get(ValueLayout.JAVA_BYTE, i), "byte " + i);
            }
        }
    }

    /**
     * The block copy: every source's bytes at its block of the result, for block sizes on the 16-byte
     * path and off it (size or address), one source to eleven (two launches), and nothing written
     * past the last block.
     */
    @Test
    void theBlockCopyPutsEverySourceAtItsBlock() {
        assumeCuda();
        SplittableRandom random = new SplittableRandom(31);
        try (CudaStream s = Cuda.newStream()) {
            for (long bytes : new long[] {1, 15, 16, 48, 4096 + 3, 65_536, 1 << 20}) {
                for (int sources : new int[] {1, 2, 3, 8, 11}) {
                    for (int skew : new int[] {0, 4}) {
                        try (DeviceBuffer in = Cuda.allocate(sources * (bytes + 16)); DeviceBuffer out = Cuda.allocate(sources * bytes + 32);
                             HostBuffer h = HostBuffer.allocate(sources * (bytes + 16)); HostBuffer got = HostBuffer.allocate(sources * bytes + 32)) {
                            for (long i = 0; i < h.byteSize(); i++) h.segment().set(ValueLayout.JAVA_BYTE, i, (byte) random.nextInt());
                            Cuda.copy(in, h, h.byteSize());
                            Cuda.fill(out, (byte) 0x5A);
                            long[] from = new long[sources];
                            for (int r = 0; r < sources; r++) from[r] = in.address() + r * (bytes + 16) + skew; // sources in reverse order below
                            long[] reversed = new long[sources];
                            for (int r = 0; r < sources; r++) reversed[r] = from[sources - 1 - r];
                            DeviceReduction.copyBlocks(out.address() + skew, reversed, bytes, s);
                            s.synchronize();
                            Cuda.copy(got, out, got.byteSize());
                            String what = sources + " blocks of " + bytes + " bytes, " + skew + " off 16";
                            for (int r = 0; r < sources; r++) {
                                long at = skew + r * bytes, src = (sources - 1 - r) * (bytes + 16) + skew;
                                assertEquals(-1L, MemorySegment.mismatch(got.segment(), at, at + bytes, h.segment(), src, src + bytes), what + ": block " + r);
                            }
                            for (long i = skew + sources * bytes; i < got.byteSize(); i++) {
                                assertEquals((byte) 0x5A, got.segment().get(ValueLayout.JAVA_BYTE, i), what + ": byte " + i + " past the blocks");
                            }
                        }
                    }
                }
            }
            assertThrows(InvalidArgumentException.class, () -> DeviceReduction.copyBlocks(0, new long[0], 8, s));
        }
    }

    /**
     * The short allGather of three ranks sharing the GPU (one stream each): every rank's bytes in rank
     * order, for sizes that fill words and that do not, aligned and not, alternating with short
     * allReduce rounds on the same scratches (one round count for both).
     */
    @Test
    void theShortAllGatherOfRanksSharingTheGpuLaysOutEveryRanksBytes() {
        assumeCuda();
        try (SharedGpuRanks g = new SharedGpuRanks(3, 16 * 1024)) {
            int ranks = g.ranks;
            long slot = g.slot;
            DeviceBuffer[] ins = new DeviceBuffer[ranks], outs = new DeviceBuffer[ranks];
            for (int r = 0; r < ranks; r++) {
                ins[r] = Cuda.allocate(slot + 8);
                outs[r] = Cuda.allocate(ranks * slot + 8);
                g.open.add(ins[r]);
                g.open.add(outs[r]);
            }
            try (HostBuffer h = HostBuffer.allocate(ranks * slot + 8); HostBuffer one = HostBuffer.allocate(8)) {
                int round = 0;
                for (long bytes : new long[] {1, 3, 8, 13, 1024, slot}) {
                    for (int shift : new int[] {0, 1}) {
                        round++;
                        for (int r = 0; r < ranks; r++) {
                            for (long i = 0; i < bytes; i++) h.segment().set(ValueLayout.JAVA_BYTE, i, (byte) (r * 37 + i * 11 + round));
                            Cuda.copy(ins[r], h, bytes);
                        }
                        for (int r = ranks - 1; r >= 0; r--) {
                            DeviceReduction.allGatherShort(outs[r].address() + shift, ins[r].address(), g.scratches, r, bytes, slot, false,
                                    g.status.address() + 4L * r, 10_000_000_000L, g.streams[r]);
                        }
                        for (int r = 0; r < ranks; r++) {
                            g.streams[r].synchronize();
                            assertEquals(0, g.status.segment().get(ValueLayout.JAVA_INT, 4L * r), "g.status of rank " + r);
                            Cuda.copy(h, outs[r], ranks * bytes + shift);
                            for (int q = 0; q < ranks; q++) {
                                for (long i = 0; i < bytes; i++) {
                                    byte want = (byte) (q * 37 + i * 11 + round), got = h.segment().get(ValueLayout.JAVA_BYTE, shift + q * bytes + i);
                                    if (got != want) {
                                        fail("allGather of " + bytes + " bytes" + (shift > 0 ? " into an unaligned result" : "") + ": rank " + r
                                                + " has " + got + " at byte " + i + " of rank " + q + "'s block, not " + want);
                                    }
                                }
                            }
                        }
                        // an allReduce round between: the same g.scratches and round count
                        for (int r = 0; r < ranks; r++) {
                            one.segment().set(ValueLayout.JAVA_LONG, 0, r + round);
                            Cuda.copy(ins[r], one, 8);
                        }
                        for (int r = ranks - 1; r >= 0; r--) {
                            DeviceReduction.allReduceShort(DataType.LONG, ReduceOp.SUM, outs[r].address(), ins[r].address(), g.scratches, r, 1, slot, false,
                                    g.status.address() + 4L * r, 10_000_000_000L, g.streams[r]);
                        }
                        for (int r = 0; r < ranks; r++) {
                            g.streams[r].synchronize();
                            Cuda.copy(one, outs[r], 8);
                            assertEquals(3L * round + 3, one.segment().get(ValueLayout.JAVA_LONG, 0), "allReduce between allGathers, rank " + r);
                        }
                    }
                }
            }
            assertThrows(InvalidArgumentException.class, () -> DeviceReduction.allGatherShort(4096, 4096, g.scratches, 0, slot + 1, slot, false,
                    g.status.address(), 1, g.streams[0]), "more bytes than a slot");
        }
    }

    /** Kernels launch through the stream's graph (the driver of CUDA 12 and later has its calls), one per stream; a closed stream takes no launch. */
    @Test
    void shortKernelsLaunchThroughTheStreamsGraph() {
        assumeCuda();
        assertTrue(KernelGraph.graphsAvailable(), "the driver (" + Cuda.describe() + ") lacks cuGraphExecKernelNodeSetParams_v2");
        CudaStream stream = Cuda.newStream();
        KernelGraph graph = stream.kernelGraph();
        assertSame(graph, stream.kernelGraph(), "one graph per stream");
        stream.close();
        assertThrows(IllegalStateException.class, stream::kernelGraph);
        assertThrows(IllegalStateException.class, () -> graph.launch(0, 1, 32, MemorySegment.NULL, () -> "a kernel"));
    }

    /**
     * Reductions of two sizes (two grids) in turn on one stream: each grid keeps a graph of its own
     * and every result is the host's; more grids than a stream keeps take over the least recently
     * launched graph, and the results stay right.
     */
    @Test
    void kernelsOfSeveralGridsInTurnKeepAGraphEachAndGiveTheHostsResults() {
        assumeCuda();
        try (CudaStream stream = Cuda.newStream()) {
            for (int round = 0; round < 4; round++) {
                for (int count : new int[] {1001, 100_003}) sumOfTwo(stream, count, round);
            }
            assertEquals(2, stream.kernelGraph().graphs(), "one graph for each of the two grids");
            for (int k = 0; k < KernelGraph.KEPT + 3; k++) sumOfTwo(stream, 1001 + 4096 * k, k);
            assertEquals(KernelGraph.KEPT, stream.kernelGraph().graphs(), "no more graphs than a stream keeps");
            sumOfTwo(stream, 1001, 9);
            sumOfTwo(stream, 100_003, 10);
        }
    }

    /** a[i] = i + round and b[i] = 2 i summed into a third buffer on {@code stream}: every element checked. */
    private static void sumOfTwo(CudaStream stream, int count, int round) {
        long bytes = 8L * count;
        try (HostBuffer h = HostBuffer.allocate(bytes); DeviceBuffer a = Cuda.allocate(bytes); DeviceBuffer b = Cuda.allocate(bytes);
                DeviceBuffer out = Cuda.allocate(bytes)) {
            for (int i = 0; i < count; i++) h.segment().setAtIndex(ValueLayout.JAVA_DOUBLE, i, i + round);
            Cuda.copy(a, h, bytes);
            for (int i = 0; i < count; i++) h.segment().setAtIndex(ValueLayout.JAVA_DOUBLE, i, 2.0 * i);
            Cuda.copy(b, h, bytes);
            DeviceReduction.reduce(DataType.DOUBLE, ReduceOp.SUM, out.address(), new long[] {a.address(), b.address()}, count, stream);
            stream.synchronize();
            Cuda.copy(h, out, bytes);
            for (int i = 0; i < count; i++) {
                double got = h.segment().getAtIndex(ValueLayout.JAVA_DOUBLE, i);
                if (got != 3.0 * i + round) {
                    throw new AssertionError(count + " elements, round " + round + ": element " + i + " is " + got + ", not " + (3.0 * i + round));
                }
            }
        }
    }

    /**
     * The short allReduce with three "ranks" in this process, each on a stream of its own, its
     * kernels running at once: every pairing, out of place and in place, against the host's rank-order
     * fold, over many rounds on the same scratches (so that both slots are reused); then a rank alone
     * comes back after its patience, its peers arrive, and it resumes.
     */
    @Test
    void theShortAllReduceOfRanksSharingTheGpuMatchesTheHost() {
        assumeCuda();
        try (SharedGpuRanks g = new SharedGpuRanks(3, 16 * 1024)) {
            int ranks = g.ranks;
            long slot = g.slot;
            CudaStream[] streams = g.streams;
            long[] scratches = g.scratches;
            HostBuffer status = g.status;
            List<AutoCloseable> open = g.open;
            long seq = 0; // the rounds the kernels count, for the messages
            SplittableRandom rnd = new SplittableRandom(17);
            for (DataType t : DataType.values()) {
                for (ReduceOp op : ReduceOp.values()) {
                    if (!op.appliesTo(t)) continue;
                    for (int count : new int[] {1, 7, (int) (slot / t.size())}) {
                        boolean inPlace = count == 7;
                        long bytes = t.bytes(count);
                        try (HostBuffer expected = HostBuffer.allocate(bytes); HostBuffer in = HostBuffer.allocate(bytes)) {
                            DeviceBuffer[] ins = new DeviceBuffer[ranks], outs = new DeviceBuffer[ranks];
                            for (int r = 0; r < ranks; r++) {
                                fill(in.segment(), t, op, count, rnd);
                                if (r == 0) MemorySegment.copy(in.segment(), 0, expected.segment(), 0, bytes);
                                else HostReduction.apply(t, op, expected.segment(), in.segment(), count);
                                ins[r] = Cuda.allocate(bytes);
                                Cuda.copy(ins[r], in, bytes);
                                outs[r] = inPlace ? ins[r] : Cuda.allocate(bytes + 8);
                            }
                            seq++;
                            for (int r = ranks - 1; r >= 0; r--) { // the last rank first: it waits for the others on the GPU
                                DeviceReduction.allReduceShort(t, op, outs[r].address(), ins[r].address(), scratches, r, count, slot, false,
                                        status.address() + 4L * r, 10_000_000_000L, streams[r]);
                            }
                            for (int r = 0; r < ranks; r++) {
                                streams[r].synchronize();
                                assertEquals(0, status.segment().get(ValueLayout.JAVA_INT, 4L * r), "status of rank " + r);
                                try (HostBuffer got = HostBuffer.allocate(bytes)) {
                                    Cuda.copy(got, outs[r], bytes);
                                    compare(t, op, expected.segment(), got.segment(), count, "short allReduce, rank " + r + ", round " + seq + ", " + count
                                            + " elements" + (inPlace ? ", in place" : ""));
                                }
                            }
                            for (int r = 0; r < ranks; r++) {
                                ins[r].close();
                                if (!inPlace) outs[r].close();
                            }
                        }
                    }
                }
            }
            // the same buffers round after round: the launches repeat the graph's arguments as they are, and the GPU counts the rounds
            DeviceBuffer[] same = new DeviceBuffer[ranks];
            for (int r = 0; r < ranks; r++) {
                same[r] = Cuda.allocate(8);
                open.add(same[r]);
            }
            try (HostBuffer h = HostBuffer.allocate(8)) {
                for (int round = 1; round <= 5; round++) {
                    for (int r = 0; r < ranks; r++) {
                        h.segment().set(ValueLayout.JAVA_LONG, 0, 100L * round + r);
                        Cuda.copy(same[r], h, 8);
                    }
                    for (int r = ranks - 1; r >= 0; r--) {
                        DeviceReduction.allReduceShort(DataType.LONG, ReduceOp.SUM, same[r].address(), same[r].address(), scratches, r, 1, slot, false,
                                status.address() + 4L * r, 10_000_000_000L, streams[r]);
                    }
                    for (int r = 0; r < ranks; r++) {
                        streams[r].synchronize();
                        assertEquals(0, status.segment().get(ValueLayout.JAVA_INT, 4L * r), "status of rank " + r + ", repeated round " + round);
                        Cuda.copy(h, same[r], 8);
                        assertEquals(300L * round + 3, h.segment().get(ValueLayout.JAVA_LONG, 0), "rank " + r + ", repeated round " + round + ": 3 x 100 x round + 0 + 1 + 2");
                    }
                }
            }
            // a rank alone: back after its patience with status 1; once the others ran, it resumes and folds
            try (DeviceBuffer a = Cuda.allocate(8); DeviceBuffer b = Cuda.allocate(8); HostBuffer h = HostBuffer.allocate(8)) {
                h.segment().set(ValueLayout.JAVA_LONG, 0, 5);
                Cuda.copy(a, h, 8);
                seq++;
                DeviceReduction.allReduceShort(DataType.LONG, ReduceOp.SUM, b.address(), a.address(), scratches, 0, 1, slot, false,
                        status.address(), 1_000_000L, streams[0]);
                streams[0].synchronize();
                assertEquals(1, status.segment().get(ValueLayout.JAVA_INT, 0), "rank 0 waited 1 ms alone and came back");
                for (int r = 1; r < ranks; r++) {
                    DeviceReduction.allReduceShort(DataType.LONG, ReduceOp.SUM, b.address(), a.address(), scratches, r, 1, slot, false,
                            status.address() + 4L * r, 10_000_000_000L, streams[r]);
                }
                DeviceReduction.allReduceShort(DataType.LONG, ReduceOp.SUM, b.address(), a.address(), scratches, 0, 1, slot, true,
                        status.address(), 10_000_000_000L, streams[0]);
                for (int r = 0; r < ranks; r++) {
                    streams[r].synchronize();
                    assertEquals(0, status.segment().get(ValueLayout.JAVA_INT, 4L * r), "status of rank " + r + " after the resume");
                }
                Cuda.copy(h, b, 8);
                assertEquals(15, h.segment().get(ValueLayout.JAVA_LONG, 0), "5 + 5 + 5");
            }
            assertThrows(InvalidArgumentException.class, () -> DeviceReduction.allReduceShort(DataType.LONG, ReduceOp.SUM, 4096, 4096, scratches, 0,
                    slot / 8 + 1, slot, false, status.address(), 1, streams[0]), "a count over the slot");
            assertThrows(InvalidArgumentException.class, () -> DeviceReduction.allReduceShort(DataType.LONG, ReduceOp.SUM, 4096, 4096, new long[9], 0,
                    1, slot, false, status.address(), 1, streams[0]), "more ranks than one launch folds");
        }
    }

    /**
     * Reduces {@code sources} random inputs of {@code count} elements on the GPU (in place into
     * source 0 when {@code inPlace}, else into a separate buffer), every buffer {@code skew} bytes
     * past a 16-byte boundary, and compares with the host's left fold.
     */
    private static void check(DataType t, ReduceOp op, int count, int sources, int skew, boolean inPlace) {
        long bytes = t.bytes(count);
        SplittableRandom rnd = new SplittableRandom(31L * t.ordinal() + 7L * op.ordinal() + count + 1000L * sources);
        List<HostBuffer> inputs = new ArrayList<>();
        List<DeviceBuffer> device = new ArrayList<>();
        try (CudaStream stream = Cuda.newStream(); HostBuffer expected = HostBuffer.allocate(bytes); HostBuffer got = HostBuffer.allocate(bytes)) {
            for (int s = 0; s < sources; s++) {
                HostBuffer h = HostBuffer.allocate(bytes);
                inputs.add(h);
                fill(h.segment(), t, op, count, rnd);
            }
            MemorySegment.copy(inputs.get(0).segment(), 0, expected.segment(), 0, bytes);
            for (int s = 1; s < sources; s++) HostReduction.apply(t, op, expected.segment(), inputs.get(s).segment(), count);

            long[] addr = new long[sources];
            for (int s = 0; s < sources; s++) {
                DeviceBuffer d = Cuda.allocate(bytes + 16);
                device.add(d);
                DeviceBuffer view = (DeviceBuffer) d.slice(skew, bytes);
                Cuda.copy(view, inputs.get(s), bytes);
                addr[s] = view.address();
            }
            long out = addr[0];
            if (!inPlace) {
                DeviceBuffer o = Cuda.allocate(bytes + 16);
                device.add(o);
                Cuda.fill(o, (byte) 0x5A);
                out = o.address() + skew;
            }
            DeviceReduction.reduce(t, op, out, addr, count, stream);
            stream.synchronize();
            Cuda.copy(got.address(), out, bytes);
            compare(t, op, expected.segment(), got.segment(), count, sources + " sources, " + count + " elements, skew " + skew + (inPlace ? ", in place" : ""));
        } finally {
            for (HostBuffer h : inputs) h.close();
            for (DeviceBuffer d : device) d.close();
        }
    }

    /**
     * Ranks of a short collective in this process, all on this GPU, each with a stream of its own (their
     * kernels run at once): a zeroed scratch each, a pinned status word each, and what a test opens
     * besides ({@link #open}), all closed in reverse order.
     */
    private static final class SharedGpuRanks implements AutoCloseable {
        final int ranks;
        final long slot;
        final CudaStream[] streams;
        final long[] scratches;
        final HostBuffer status;
        final List<AutoCloseable> open = new ArrayList<>();

        SharedGpuRanks(int ranks, long slot) {
            this.ranks = ranks;
            this.slot = slot;
            this.streams = new CudaStream[ranks];
            this.scratches = new long[ranks];
            this.status = Cuda.allocatePinned(64);
            open.add(status);
            for (int r = 0; r < ranks; r++) {
                DeviceBuffer scratch = Cuda.allocate(DeviceReduction.shortScratchBytes(slot));
                open.add(scratch);
                Cuda.fill(scratch, (byte) 0);
                scratches[r] = scratch.address();
                streams[r] = Cuda.newStream();
                open.add(streams[r]);
            }
        }

        @Override
        public void close() {
            for (int i = open.size() - 1; i >= 0; i--) {
                try {
                    open.get(i).close();
                } catch (Exception e) {
                    throw new AssertionError(e);
                }
            }
        }
    }

    private static void compare(DataType t, ReduceOp op, MemorySegment expected, MemorySegment got, int count, String what) {
        int size = t.size();
        for (int i = 0; i < count; i++) {
            long at = (long) i * size;
            byte[] e = expected.asSlice(at, size).toArray(ValueLayout.JAVA_BYTE);
            byte[] g = got.asSlice(at, size).toArray(ValueLayout.JAVA_BYTE);
            if (Arrays.equals(e, g) || bothNaN(t, expected, got, at)) continue;
            Assertions.fail(t + " " + op + " (" + what + "): element " + i + " is " + hex(g) + " on the GPU, " + hex(e) + " on the host");
        }
    }

    private static boolean bothNaN(DataType t, MemorySegment a, MemorySegment b, long at) {
        return switch (t) {
            case FLOAT -> Float.isNaN(a.get(ValueLayout.JAVA_FLOAT_UNALIGNED, at)) && Float.isNaN(b.get(ValueLayout.JAVA_FLOAT_UNALIGNED, at));
            case DOUBLE -> Double.isNaN(a.get(ValueLayout.JAVA_DOUBLE_UNALIGNED, at)) && Double.isNaN(b.get(ValueLayout.JAVA_DOUBLE_UNALIGNED, at));
            case FLOAT16 -> f16NaN(a.get(ValueLayout.JAVA_SHORT_UNALIGNED, at)) && f16NaN(b.get(ValueLayout.JAVA_SHORT_UNALIGNED, at));
            case BFLOAT16 -> bf16NaN(a.get(ValueLayout.JAVA_SHORT_UNALIGNED, at)) && bf16NaN(b.get(ValueLayout.JAVA_SHORT_UNALIGNED, at));
            default -> false;
        };
    }

    private static boolean f16NaN(short s) {
        return (s & 0x7C00) == 0x7C00 && (s & 0x03FF) != 0;
    }

    private static boolean bf16NaN(short s) {
        return (s & 0x7F80) == 0x7F80 && (s & 0x007F) != 0;
    }

    private static String hex(byte[] b) {
        StringBuilder sb = new StringBuilder("0x");
        for (int i = b.length - 1; i >= 0; i--) sb.append(String.format(Locale.ROOT, "%02x", b[i] & 0xFF)); // little endian: most significant first
        return sb.toString();
    }

    // ---- data ------------------------------------------------------------------------------------

    private static final float[] FLOAT_SPECIALS = {Float.NaN, Float.intBitsToFloat(0x7fa00001), Float.intBitsToFloat(0xffc00123), Float.POSITIVE_INFINITY,
        Float.NEGATIVE_INFINITY, 0f, -0f, Float.MIN_VALUE, -Float.MIN_VALUE, Float.MIN_NORMAL, Float.MAX_VALUE, -Float.MAX_VALUE, 1f, -1f,
        1f + Math.ulp(1f), 0.5f * Math.ulp(1f), 3e38f};
    private static final double[] DOUBLE_SPECIALS = {Double.NaN, Double.longBitsToDouble(0x7ff4000000000001L), Double.POSITIVE_INFINITY,
        Double.NEGATIVE_INFINITY, 0d, -0d, Double.MIN_VALUE, -Double.MIN_VALUE, Double.MIN_NORMAL, Double.MAX_VALUE, -Double.MAX_VALUE, 1d, -1d,
        0.5 * Math.ulp(1d), 1e308};

    /** Random elements of {@code t}: raw bit patterns, small values that make ties and carries, and the special values. */
    private static void fill(MemorySegment s, DataType t, ReduceOp op, int count, SplittableRandom r) {
        for (int i = 0; i < count; i++) {
            long at = (long) i * t.size();
            int pick = r.nextInt(10);
            switch (t) {
                case BYTE -> s.set(ValueLayout.JAVA_BYTE, at, (byte) (pick < 2 ? 0 : r.nextInt(256)));
                case SHORT -> s.set(ValueLayout.JAVA_SHORT_UNALIGNED, at, (short) (pick < 2 ? 0 : pick < 5 ? r.nextInt(-3, 4) : r.nextInt()));
                case INT -> s.set(ValueLayout.JAVA_INT_UNALIGNED, at, pick < 2 ? 0 : pick < 5 ? r.nextInt(-3, 4) : r.nextInt());
                case LONG -> s.set(ValueLayout.JAVA_LONG_UNALIGNED, at, pick < 2 ? 0 : pick < 5 ? r.nextInt(-3, 4) : r.nextLong());
                case FLOAT -> s.set(ValueLayout.JAVA_FLOAT_UNALIGNED, at, pick < 2 ? FLOAT_SPECIALS[r.nextInt(FLOAT_SPECIALS.length)]
                        : pick < 4 ? Float.intBitsToFloat(r.nextInt()) : pick < 7 ? (float) r.nextDouble(-4, 4) : (float) r.nextGaussian() * (1 << r.nextInt(20)));
                case DOUBLE -> s.set(ValueLayout.JAVA_DOUBLE_UNALIGNED, at, pick < 2 ? DOUBLE_SPECIALS[r.nextInt(DOUBLE_SPECIALS.length)]
                        : pick < 4 ? Double.longBitsToDouble(r.nextLong()) : pick < 7 ? r.nextDouble(-4, 4) : r.nextGaussian() * (1L << r.nextInt(40)));
                // every 16-bit pattern is a value (NaNs, infinities, subnormals, -0 included): half raw, half small normal values
                case FLOAT16 -> s.set(ValueLayout.JAVA_SHORT_UNALIGNED, at, pick < 5 ? (short) r.nextInt() : Float.floatToFloat16((float) r.nextDouble(-8, 8)));
                case BFLOAT16 -> s.set(ValueLayout.JAVA_SHORT_UNALIGNED, at, pick < 5 ? (short) r.nextInt()
                        : HostReduction.toBfloat16((float) r.nextDouble(-8, 8)));
                default -> {
                    // pairs: random bytes everywhere (padding too), then a small value (ties) and an index
                    byte[] raw = new byte[t.size()];
                    for (int k = 0; k < raw.length; k++) raw[k] = (byte) r.nextInt(256);
                    MemorySegment.copy(MemorySegment.ofArray(raw), 0, s, at, raw.length);
                    long v = r.nextInt(-2, 3);
                    switch (t.valueType()) {
                        case SHORT -> s.set(ValueLayout.JAVA_SHORT_UNALIGNED, at, (short) v);
                        case INT -> s.set(ValueLayout.JAVA_INT_UNALIGNED, at, (int) v);
                        case LONG -> s.set(ValueLayout.JAVA_LONG_UNALIGNED, at, pick < 3 ? r.nextLong() : v);
                        case FLOAT -> s.set(ValueLayout.JAVA_FLOAT_UNALIGNED, at, pick < 2 ? FLOAT_SPECIALS[r.nextInt(FLOAT_SPECIALS.length)] : v);
                        case DOUBLE -> s.set(ValueLayout.JAVA_DOUBLE_UNALIGNED, at, pick < 2 ? DOUBLE_SPECIALS[r.nextInt(DOUBLE_SPECIALS.length)] : v);
                        default -> throw new IllegalArgumentException(t.toString());
                    }
                    s.set(ValueLayout.JAVA_INT_UNALIGNED, at + t.indexOffset(), r.nextInt(-5, 6));
                }
            }
        }
    }
}

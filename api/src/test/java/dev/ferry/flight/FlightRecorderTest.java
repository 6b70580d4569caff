// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry.flight;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ferry.Communicator;
import dev.ferry.DataType;
import dev.ferry.HostBuffer;
import dev.ferry.ReduceOp;
import dev.ferry.Status;
import dev.ferry.spi.CheckedCommunicator;
import dev.ferry.spi.Transport;
import java.lang.reflect.InvocationHandler;
import java.lang.reflect.Proxy;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import jdk.jfr.Recording;
import jdk.jfr.consumer.RecordedEvent;
import jdk.jfr.consumer.RecordingFile;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The flight recorder without MPI: communicators over a transport whose operations do nothing. */
class FlightRecorderTest {
    /** A transport of rank 0 of 2 that does nothing; allReduce names an algorithm, split and duplicate make another. */
    static Transport idle() {
        InvocationHandler h = (proxy, m, args) -> switch (m.getName()) {
            case "backend" -> "idle";
            case "rank" -> 0;
            case "size" -> 2;
            case "maxTag" -> 32767;
            case "supportsDeviceBuffers" -> false;
            case "recv", "probe" -> new Status((int) args[m.getName().equals("recv") ? 3 : 0], 0, 0);
            case "iprobe", "improbe" -> Optional.empty();
            case "split", "duplicate" -> idle();
            case "allReduce" -> {
                CurrentCall.algorithm("idle-allreduce");
                yield null;
            }
            case "toString" -> "idle transport";
            case "hashCode" -> System.identityHashCode(proxy);
            case "equals" -> proxy == args[0];
            default -> m.isDefault() ? InvocationHandler.invokeDefault(proxy, m, args) : null;
        };
        return (Transport) Proxy.newProxyInstance(Transport.class.getClassLoader(), new Class<?>[] {Transport.class}, h);
    }

    static OperationRing ring(Communicator c) {
        return FlightRecorder.rings().stream().filter(r -> r.communicator() == c).findFirst().orElseThrow();
    }

    @Test
    void communicatorsAreNamedByTheCallThatMakesThem() {
        Communicator world = new CheckedCommunicator(idle());
        String root = ring(world).id();
        assertTrue(root.matches("\\d+"), root);
        assertEquals("opened", ring(world).origin());
        Communicator dup = world.duplicate();            // collective #1
        world.barrier();                                 // #2
        Communicator half = world.split(3, 0);           // #3, color 3
        Communicator dupOfDup = dup.duplicate();          // #1 of the duplicate
        assertEquals(root + ".1", ring(dup).id());
        assertEquals("duplicate #1 of " + root, ring(dup).origin());
        assertEquals(root + ".3c3", ring(half).id());
        assertEquals("split #3 of " + root + " (color 3)", ring(half).origin());
        assertEquals(root + ".1.1", ring(dupOfDup).id());
        assertEquals(3, ring(world).collectives());
        half.close();
        assertTrue(FlightRecorder.rings().stream().noneMatch(r -> r.communicator() == half) || ring(half).gone());
    }

    @Test
    void theRingKeepsTheLastOperationsWithoutAllocatingPerCall() {
        Communicator c = new CheckedCommunicator(idle());
        try (HostBuffer a = HostBuffer.allocate(64); HostBuffer b = HostBuffer.allocate(64)) {
            for (int i = 0; i < 100; i++) c.barrier();
            c.allReduce(a, b, 2, DataType.LONG, ReduceOp.SUM);
            c.send(a, 16, DataType.BYTE, 1, 9);
            List<RingEntry.Snapshot> ops = ring(c).snapshot();
            assertEquals(64, ops.size(), "ferry.flight.ring's default, 64, is kept");
            assertEquals(102, ops.get(63).seq());
            assertEquals(39, ops.get(0).seq());
            RingEntry.Snapshot allReduce = ops.get(62);
            assertEquals("allReduce", allReduce.op());
            assertEquals(101, allReduce.collective());
            assertEquals(DataType.LONG, allReduce.type());
            assertEquals(2, allReduce.count());
            assertEquals(dev.ferry.MemoryKind.HOST_PAGEABLE, allReduce.memory());
            assertEquals("idle-allreduce", allReduce.algorithm(), "the transport's name for its algorithm");
            assertTrue(allReduce.done());
            RingEntry.Snapshot send = ops.get(63);
            assertEquals("send", send.op());
            assertEquals(-1, send.collective());
            assertEquals(1, send.peer());
            assertEquals(9, send.tag());
            assertEquals(CurrentCall.Kind.POINT_TO_POINT, send.kind());
        }
        assertEquals(64, FlightRecorder.ringSize(64));
        assertEquals(128, FlightRecorder.ringSize(65));
        assertEquals(1, FlightRecorder.ringSize(1));
        assertEquals(0, FlightRecorder.ringSize(0));
    }

    @Test
    void aDumpReadsBackAndNamesTheCallInProgress(@TempDir Path dir) throws Exception {
        Communicator c = new CheckedCommunicator(idle());
        String id = ring(c).id();
        c.barrier();
        // a call in progress on this thread while the dump is rendered: a receive whose transport renders the dump
        String[] text = new String[1];
        Transport t = idle();
        Communicator blocking = new CheckedCommunicator((Transport) Proxy.newProxyInstance(Transport.class.getClassLoader(), new Class<?>[] {Transport.class},
                (proxy, m, args) -> {
                    if (m.getName().equals("recv")) {
                        text[0] = RankDump.render("job-1", 0, 2, "TIMEOUT: test", "", false);
                        return new Status(1, 7, 0);
                    }
                    return m.invoke(t, args);
                }));
        try (HostBuffer b = HostBuffer.allocate(64)) {
            blocking.recv(b, 4, DataType.INT, 1, 7);
        }
        Path f = dir.resolve("rank-0.txt");
        Files.writeString(f, text[0]);
        RankDump d = RankDump.read(f);
        assertEquals("job-1", d.header().job());
        assertEquals("TIMEOUT: test", d.header().reason());
        RankDump.Comm comm = d.comms().stream().filter(x -> x.id().equals(id)).findFirst().orElseThrow();
        assertEquals(1, comm.collectives());
        assertEquals("barrier", comm.ops().get(0).op());
        RankDump.Operation call = d.calls().stream().filter(x -> x.op().equals("recv")).findFirst().orElseThrow();
        assertEquals("recv(source 1, tag 7, 4 x INT)", call.describe());
        assertEquals(ring(blocking).id(), call.comm());
        assertEquals(Thread.currentThread().getName(), call.thread());
    }

    @Test
    void jfrRecordsOneEventPerCall(@TempDir Path dir) throws Exception {
        Communicator c = new CheckedCommunicator(idle());
        String id = ring(c).id();
        Path file = dir.resolve("calls.jfr");
        try (Recording r = new Recording(); HostBuffer a = HostBuffer.allocate(64); HostBuffer b = HostBuffer.allocate(64)) {
            r.enable("dev.ferry.Collective").withThreshold(Duration.ZERO);
            r.enable("dev.ferry.PointToPoint").withThreshold(Duration.ZERO);
            r.start();
            c.allReduce(a, b, 1, DataType.DOUBLE, ReduceOp.SUM);
            c.broadcast(a, 3, DataType.INT, 1);
            c.send(a, 5, DataType.BYTE, 1, 42);
            r.stop();
            r.dump(file);
        }
        List<RecordedEvent> events = RecordingFile.readAllEvents(file).stream()
                .filter(e -> e.getEventType().getName().startsWith("dev.ferry.") && id.equals(e.getString("communicator"))).toList();
        assertEquals(3, events.size(), events.toString());
        RecordedEvent allReduce = events.get(0);
        assertEquals("dev.ferry.Collective", allReduce.getEventType().getName());
        assertEquals("allReduce", allReduce.getString("operation"));
        assertEquals(1, allReduce.getLong("sequence"));
        assertEquals(8, allReduce.getLong("bytes"));
        assertEquals("DOUBLE", allReduce.getString("datatype"));
        assertEquals("HOST_PAGEABLE", allReduce.getString("memory"));
        assertEquals("idle-allreduce", allReduce.getString("algorithm"));
        assertEquals(-1, allReduce.getInt("root"));
        assertNotNull(allReduce.getDuration());
        RecordedEvent broadcast = events.get(1);
        assertEquals(1, broadcast.getInt("root"));
        assertEquals(2, broadcast.getLong("sequence"));
        assertEquals("idle", broadcast.getString("algorithm"), "without a name from the transport: the backend");
        RecordedEvent send = events.get(2);
        assertEquals("dev.ferry.PointToPoint", send.getEventType().getName());
        assertEquals(1, send.getInt("peer"));
        assertEquals(42, send.getInt("tag"));
        assertEquals(5, send.getLong("bytes"));
        assertEquals(3, send.getLong("sequence"));
    }
}

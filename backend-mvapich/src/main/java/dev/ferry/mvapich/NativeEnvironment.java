package dev.ferry.mvapich;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;

import dev.ferry.FerryException;
import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.invoke.MethodHandle;
import java.util.ArrayList;
import java.util.List;

/**
 * The process environment that native libraries read, prepared for life inside a JVM before the
 * MPI library is loaded.
 *
 * <p>UCX (MPICH's ch4:ucx device, MVAPICH-Plus, Open MPI's pml/ucx) installs handlers for SIGSEGV,
 * SIGBUS, SIGILL and SIGFPE when its {@code libucs} is loaded, to print a backtrace and abort. The
 * JVM uses those very signals in normal operation (implicit null checks, safepoint polls, integer
 * division), so a JVM with UCX's handlers dies at its first NullPointerException ("Caught signal 11
 * (Segmentation fault)" from libucs). Setting {@code UCX_ERROR_SIGNALS} to the empty list before
 * the library is loaded keeps the JVM's handlers; a value the user set is left alone.
 */
@SuppressWarnings("restricted") // native access is what this backend is for (run with --enable-native-access)
final class NativeEnvironment {
    /** What was changed, for the probe report; empty when nothing. */
    private static final List<String> CHANGES = new ArrayList<>();

    private NativeEnvironment() {
    }

    /** Sets what the JVM needs, unless the user set it; called once, before the MPI library is loaded. */
    static synchronized void prepareForJvm() {
        if (System.getenv("UCX_ERROR_SIGNALS") == null && setenv("UCX_ERROR_SIGNALS", "")) {
            CHANGES.add("UCX_ERROR_SIGNALS= (keeps the JVM's SIGSEGV/SIGBUS handlers)");
        }
    }

    /** The variables set by {@link #prepareForJvm()}, for the report. */
    static synchronized List<String> changes() {
        return List.copyOf(CHANGES);
    }

    /** libc {@code setenv(name, value, 0)}: never overwrites; true when it succeeded. */
    private static boolean setenv(String name, String value) {
        Linker linker = Linker.nativeLinker();
        MemorySegment fn = linker.defaultLookup().find("setenv")
                .orElseThrow(() -> new FerryException("setenv not found in the C library"));
        MethodHandle h = linker.downcallHandle(fn, FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS, JAVA_INT));
        try (Arena a = Arena.ofConfined()) {
            return (int) h.invokeExact(a.allocateFrom(name), a.allocateFrom(value), 0) == 0;
        } catch (Throwable t) {
            throw new FerryException("setenv(" + name + ") failed: " + t, t);
        }
    }
}
